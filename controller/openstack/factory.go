// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"k8s.io/client-go/util/workqueue"
)

// ClientFactory hands out authenticated Neutron clients.
type ClientFactory interface {
	// Network returns a Neutron client for the credentials in the given region.
	Network(ctx context.Context, auth AuthConfig) (*Network, error)
}

// AuthConfig is everything needed to authenticate against Keystone and find Neutron.
type AuthConfig struct {
	Credentials *Credentials
	// AuthURL is the Keystone URL from the CloudProfile; Credentials.AuthURL (key "authURL"
	// of the Secret) wins over it when set, as in provider-openstack.
	AuthURL string
	// Region selects the Neutron endpoint in the service catalog.
	Region string
	// CloudProfileCACert is the CA bundle the CloudProfile names for this region's Keystone
	// (keystoneURLs[].caCert, else keystoneCACert). It is trusted on top of the system roots
	// and the Secret's caCert.
	CloudProfileCACert string
	// ForceInsecure is the CloudProfile's keystoneForceInsecure: no certificate verification,
	// as with key "insecure" of the Secret.
	ForceInsecure bool
}

// insecure tells whether certificate verification is off.
func (a AuthConfig) insecure() bool {
	return a.ForceInsecure || (a.Credentials != nil && a.Credentials.Insecure)
}

// tlsConfig is nil for the system roots alone; otherwise the system roots plus the CAs of
// the Secret and the CloudProfile, as provider-openstack trusts them.
func (a AuthConfig) tlsConfig() (*tls.Config, error) {
	c := a.Credentials
	if c.CACert == "" && a.CloudProfileCACert == "" && !a.insecure() {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		// No readable system roots (e.g. a distroless image without them): the given CAs alone.
		pool = x509.NewCertPool()
	}
	if c.CACert != "" && !pool.AppendCertsFromPEM([]byte(c.CACert)) {
		return nil, NewConfigurationError(errors.New("key \"caCert\" of the credentials Secret holds no PEM certificate"))
	}
	if a.CloudProfileCACert != "" && !pool.AppendCertsFromPEM([]byte(a.CloudProfileCACert)) {
		return nil, NewConfigurationError(errors.New("the CloudProfile's keystoneCACert (or caCert of the region's keystoneURLs entry) holds no PEM certificate"))
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            pool,
		InsecureSkipVerify: a.insecure(), //nolint:gosec // explicitly requested in the Secret or the CloudProfile
	}, nil
}

// Plaintext tells whether Keystone, and so the credentials sent to it, is reached without
// TLS (an http:// URL).
func (a AuthConfig) Plaintext() bool {
	u, err := url.Parse(a.authURL())
	return err == nil && strings.EqualFold(u.Scheme, "http")
}

func (a AuthConfig) authURL() string {
	if a.Credentials != nil && a.Credentials.AuthURL != "" {
		return a.Credentials.AuthURL
	}
	return a.AuthURL
}

// key fingerprints the auth config; it is the cache key of the factory.
func (a AuthConfig) key() string {
	h := sha256.New()
	c := a.Credentials
	for _, s := range []string{a.authURL(), a.Region, c.DomainName, c.TenantName, c.Username, c.Password,
		c.ApplicationCredentialID, c.ApplicationCredentialName, c.ApplicationCredentialSecret, c.CACert, fmt.Sprint(c.Insecure), a.CloudProfileCACert, fmt.Sprint(a.ForceInsecure)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FactoryOptions configure NewClientFactory.
type FactoryOptions struct {
	// Metrics receives a count and a duration per request. Required.
	Metrics *Metrics
	// Timeout bounds every HTTP request. Default: 30s.
	Timeout time.Duration
	// MaxIdle drops a cached client that was not used for this long. Default: 24h.
	MaxIdle time.Duration
	// Now is the clock (tests). Default: time.Now.
	Now func() time.Time
	// Log receives the warning that certificate verification is off. Default: discard.
	Log logr.Logger
	// AuthFailureBackoff bounds the logins with credentials that Keystone rejected (401):
	// after the n-th rejection in a row, the same credentials are not sent again for
	// Min·2^(n-1), at most Max; an error is returned instead. Keystone's lockout
	// (lockout_failure_attempts) counts failed logins of the user, which OCCM, CSI and MCM
	// share, so a wrong password must not be retried at reconcile speed. Changed
	// credentials are tried at once. Defaults: 1m and 30m.
	AuthFailureBackoff Backoff
}

// Backoff is an exponential backoff.
type Backoff struct {
	Min, Max time.Duration
}

// CachingClientFactory authenticates once per distinct AuthConfig and reuses the provider
// client afterwards; gophercloud re-authenticates by itself when the token expires.
type CachingClientFactory struct {
	opts FactoryOptions

	mu      sync.Mutex
	clients map[string]*cachedClient
	// rejected holds the credentials that Keystone rejected, until their next try.
	rejected map[string]rejection
	// authFailures counts the rejections in a row per credentials.
	authFailures workqueue.TypedRateLimiter[string]
}

type rejection struct {
	err   error
	until time.Time
}

type cachedClient struct {
	network  *Network
	lastUsed time.Time
}

var _ ClientFactory = (*CachingClientFactory)(nil)

// NewClientFactory returns a ClientFactory that caches authenticated clients.
func NewClientFactory(opts FactoryOptions) *CachingClientFactory {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxIdle == 0 {
		opts.MaxIdle = 24 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.AuthFailureBackoff.Min == 0 {
		opts.AuthFailureBackoff.Min = time.Minute
	}
	if opts.AuthFailureBackoff.Max == 0 {
		opts.AuthFailureBackoff.Max = 30 * time.Minute
	}
	return &CachingClientFactory{
		opts:         opts,
		clients:      map[string]*cachedClient{},
		rejected:     map[string]rejection{},
		authFailures: workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.AuthFailureBackoff.Min, opts.AuthFailureBackoff.Max),
	}
}

// Network implements ClientFactory.
func (f *CachingClientFactory) Network(ctx context.Context, auth AuthConfig) (*Network, error) {
	if auth.Credentials == nil {
		return nil, fmt.Errorf("%w: no credentials given", ErrInvalidCredentials)
	}
	if auth.authURL() == "" {
		return nil, NewConfigurationError(errors.New("no Keystone URL: set key \"authURL\" in the credentials Secret or keyStoneURL(s) in the CloudProfile"))
	}
	key := auth.key()

	f.mu.Lock()
	now := f.opts.Now()
	for k, c := range f.clients {
		if now.Sub(c.lastUsed) > f.opts.MaxIdle {
			delete(f.clients, k)
		}
	}
	for k, r := range f.rejected {
		if now.Sub(r.until) > f.opts.MaxIdle {
			delete(f.rejected, k)
			f.authFailures.Forget(k)
		}
	}
	if c, ok := f.clients[key]; ok {
		c.lastUsed = now
		f.mu.Unlock()
		return c.network, nil
	}
	if r, ok := f.rejected[key]; ok && now.Before(r.until) {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w (not sent to Keystone again before %s, to spare the user a lockout)", r.err, r.until.UTC().Format(time.RFC3339))
	}
	f.mu.Unlock()

	network, err := f.authenticate(ctx, auth)

	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
			f.rejectLocked(key, err)
		}
		return nil, err
	}
	delete(f.rejected, key)
	f.authFailures.Forget(key)
	network.rejected = func(err error) { f.reject(key, err) }
	if c, ok := f.clients[key]; ok { // a concurrent caller won
		c.lastUsed = f.opts.Now()
		return c.network, nil
	}
	f.clients[key] = &cachedClient{network: network, lastUsed: f.opts.Now()}
	return network, nil
}

// reject drops the cached client of key after Keystone rejected its credentials (e.g. a
// password changed in Keystone before the Secret) and holds further logins back with the
// backoff of a rejected login, to spare the user a lockout.
func (f *CachingClientFactory) reject(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clients, key)
	f.rejectLocked(key, err)
}

func (f *CachingClientFactory) rejectLocked(key string, err error) {
	f.rejected[key] = rejection{err: err, until: f.opts.Now().Add(f.authFailures.When(key))}
}

// Forget drops the cached client of auth, e.g. after the credentials were rejected.
func (f *CachingClientFactory) Forget(auth AuthConfig) {
	if auth.Credentials == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clients, auth.key())
}

func (f *CachingClientFactory) authenticate(ctx context.Context, auth AuthConfig) (*Network, error) {
	c := auth.Credentials
	base := http.DefaultTransport.(*http.Transport).Clone()
	tlsConfig, err := auth.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		base.TLSClientConfig = tlsConfig
	}
	if auth.insecure() {
		f.opts.Log.Info("WARNING: the TLS certificates of Keystone and Neutron are not verified, as the credentials Secret (insecure) or the CloudProfile (keystoneForceInsecure) requests",
			"authURL", auth.authURL(), "region", auth.Region)
	}

	provider, err := openstack.NewClient(auth.authURL())
	if err != nil {
		return nil, NewConfigurationError(fmt.Errorf("the Keystone URL is malformed: %w", err))
	}
	provider.HTTPClient = http.Client{
		Transport: &InstrumentedTransport{Next: base, Metrics: f.opts.Metrics},
		Timeout:   f.opts.Timeout,
	}

	opts := gophercloud.AuthOptions{
		IdentityEndpoint: auth.authURL(),
		AllowReauth:      true,
	}
	if c.UsesApplicationCredential() {
		opts.ApplicationCredentialID = c.ApplicationCredentialID
		opts.ApplicationCredentialName = c.ApplicationCredentialName
		opts.ApplicationCredentialSecret = c.ApplicationCredentialSecret
		if c.ApplicationCredentialID == "" {
			opts.Username = c.Username
			opts.DomainName = c.DomainName
		}
	} else {
		opts.Username = c.Username
		opts.Password = c.Password
		opts.DomainName = c.DomainName
		opts.TenantName = c.TenantName
	}
	// Keystone v3 directly: no version discovery request.
	if err := openstack.AuthenticateV3(ctx, provider, &opts, gophercloud.EndpointOpts{}); err != nil {
		if IsNotFound(err) {
			// No token resource at this URL: not Keystone's v3 endpoint.
			return nil, NewConfigurationError(fmt.Errorf("authenticate with Keystone failed (HTTP 404): %s has no v3 token API; set the Keystone v3 URL (ending in /v3) in key \"authURL\" of the credentials Secret or in the CloudProfile", auth.authURL()))
		}
		return nil, Classify(err, "authenticate with Keystone")
	}

	client, err := networkClient(ctx, provider, auth.Region)
	if err != nil {
		return nil, NewConfigurationError(fmt.Errorf("no Neutron endpoint for region %q in the Keystone catalog: %w", auth.Region, err))
	}
	return &Network{client: client}, nil
}

// networkClient finds Neutron in the token's service catalog. Unlike
// openstack.NewNetworkV2 it does not ask the endpoint for its versions (no EndpointOpts.Version),
// which saves a request per authentication.
func networkClient(ctx context.Context, provider *gophercloud.ProviderClient, region string) (*gophercloud.ServiceClient, error) {
	result, ok := provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return nil, errors.New("the authentication gave no service catalog")
	}
	catalog, err := result.ExtractServiceCatalog()
	if err != nil {
		return nil, err
	}
	eo := gophercloud.EndpointOpts{Region: region}
	eo.ApplyDefaults("network")
	url, err := openstack.V3Endpoint(ctx, provider, catalog, eo)
	if err != nil {
		return nil, err
	}
	url = gophercloud.NormalizeURL(url)
	return &gophercloud.ServiceClient{
		ProviderClient: provider,
		Endpoint:       url,
		ResourceBase:   url + "v2.0/",
		Type:           "network",
	}, nil
}
