// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"errors"
	"fmt"
	"strings"
)

// Keys of the credentials Secret, as used by gardener-extension-provider-openstack.
const (
	KeyDomainName                  = "domainName"
	KeyTenantName                  = "tenantName"
	KeyUserName                    = "username"
	KeyPassword                    = "password"
	KeyApplicationCredentialID     = "applicationCredentialID"
	KeyApplicationCredentialName   = "applicationCredentialName"
	KeyApplicationCredentialSecret = "applicationCredentialSecret"
	KeyAuthURL                     = "authURL"
	KeyCACert                      = "caCert"
	KeyInsecure                    = "insecure"
)

// Credentials are the OpenStack credentials of a shoot. Its String method never prints a
// secret value.
type Credentials struct {
	DomainName string
	TenantName string

	Username string
	Password string

	ApplicationCredentialID     string
	ApplicationCredentialName   string
	ApplicationCredentialSecret string

	// AuthURL is optional in the Secret; when empty, the CloudProfile's Keystone URL is used.
	AuthURL  string
	CACert   string
	Insecure bool
}

// String describes the credentials without their secrets.
func (c *Credentials) String() string {
	kind := "password"
	if c.UsesApplicationCredential() {
		kind = "application credential"
	}
	return fmt.Sprintf("%s credentials for project %q in domain %q", kind, c.TenantName, c.DomainName)
}

// UsesApplicationCredential tells whether the credentials are an application credential.
func (c *Credentials) UsesApplicationCredential() bool {
	return c.ApplicationCredentialSecret != ""
}

// ErrInvalidCredentials marks a Secret whose keys do not form valid credentials.
var ErrInvalidCredentials = errors.New("invalid OpenStack credentials")

// CredentialsFromSecretData reads credentials from the data of a Secret with the keys of
// provider-openstack. Errors name the offending keys, never their values.
func CredentialsFromSecretData(data map[string][]byte) (*Credentials, error) {
	get := func(key string) string { return strings.TrimSpace(string(data[key])) }
	c := &Credentials{
		DomainName:                  get(KeyDomainName),
		TenantName:                  get(KeyTenantName),
		Username:                    get(KeyUserName),
		Password:                    string(data[KeyPassword]),
		ApplicationCredentialID:     get(KeyApplicationCredentialID),
		ApplicationCredentialName:   get(KeyApplicationCredentialName),
		ApplicationCredentialSecret: string(data[KeyApplicationCredentialSecret]),
		AuthURL:                     get(KeyAuthURL),
		CACert:                      string(data[KeyCACert]),
	}

	var problems []string
	if c.DomainName == "" {
		problems = append(problems, fmt.Sprintf("key %q is missing", KeyDomainName))
	}
	if c.TenantName == "" {
		problems = append(problems, fmt.Sprintf("key %q is missing", KeyTenantName))
	}
	switch insecure := get(KeyInsecure); insecure {
	case "":
	case "true":
		c.Insecure = true
	default:
		problems = append(problems, fmt.Sprintf("key %q may only be \"true\"", KeyInsecure))
	}

	hasPassword := c.Password != ""
	hasAppCred := c.ApplicationCredentialID != "" || c.ApplicationCredentialName != "" || c.ApplicationCredentialSecret != ""
	switch {
	case hasPassword && hasAppCred:
		problems = append(problems, fmt.Sprintf("give either %q and %q or an application credential (%q or %q, and %q), not both",
			KeyUserName, KeyPassword, KeyApplicationCredentialID, KeyApplicationCredentialName, KeyApplicationCredentialSecret))
	case hasPassword:
		if c.Username == "" {
			problems = append(problems, fmt.Sprintf("key %q is missing for password authentication", KeyUserName))
		}
	case hasAppCred:
		if c.ApplicationCredentialSecret == "" {
			problems = append(problems, fmt.Sprintf("key %q is missing", KeyApplicationCredentialSecret))
		}
		if c.ApplicationCredentialID == "" {
			if c.ApplicationCredentialName == "" {
				problems = append(problems, fmt.Sprintf("key %q or %q is missing", KeyApplicationCredentialID, KeyApplicationCredentialName))
			} else if c.Username == "" {
				problems = append(problems, fmt.Sprintf("key %q is needed with %q", KeyUserName, KeyApplicationCredentialName))
			}
		}
	default:
		problems = append(problems, fmt.Sprintf("give either %q and %q or an application credential (%q or %q, and %q)",
			KeyUserName, KeyPassword, KeyApplicationCredentialID, KeyApplicationCredentialName, KeyApplicationCredentialSecret))
	}

	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidCredentials, strings.Join(problems, "; "))
	}
	return c, nil
}
