// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopheropenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplicationCredentials creates and deletes the project member's application credentials
// in the local Keystone, as an operator does when rotating the shoot's credentials.
type ApplicationCredentials struct {
	identity *gophercloud.ServiceClient
	userID   string
}

// ApplicationCredentials authenticates as the project's member (Username, Password):
// Keystone lets a user manage only its own application credentials, with a password token.
func (e OpenStackEnv) ApplicationCredentials(ctx context.Context) (*ApplicationCredentials, error) {
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: e.AuthURL, Username: e.Username, Password: e.Password, DomainName: e.DomainName,
		Scope: &gophercloud.AuthScope{ProjectName: e.ProjectName, DomainName: e.DomainName},
	}
	// The local Keystone's uwsgi now and then resets a new connection under load: try again.
	var provider *gophercloud.ProviderClient
	var err error
	if pollErr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		provider, err = gopheropenstack.AuthenticatedClient(ctx, opts)
		return err == nil, nil
	}); pollErr != nil {
		return nil, fmt.Errorf("authenticating at Keystone as %s: %w", e.Username, errors.Join(err, pollErr))
	}
	identity, err := gopheropenstack.NewIdentityV3(provider, gophercloud.EndpointOpts{Region: e.Region})
	if err != nil {
		return nil, fmt.Errorf("the identity client: %w", err)
	}
	token, ok := provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return nil, fmt.Errorf("keystone's authentication result is a %T, not a v3 token", provider.GetAuthResult())
	}
	user, err := token.ExtractUser()
	if err != nil {
		return nil, fmt.Errorf("the user of the token: %w", err)
	}
	return &ApplicationCredentials{identity: identity, userID: user.ID}, nil
}

// Create creates an application credential named name and returns its ID and secret.
func (a *ApplicationCredentials) Create(ctx context.Context, name string) (id, secret string, err error) {
	secret = rand.Text()
	ac, err := applicationcredentials.Create(ctx, a.identity, a.userID, applicationcredentials.CreateOpts{
		Name: name, Secret: secret, Description: "gardener-extension-kube-vip test: a rotated credential",
	}).Extract()
	if err != nil {
		return "", "", fmt.Errorf("creating application credential %s: %w", name, err)
	}
	return ac.ID, secret, nil
}

// Delete deletes the application credential; Keystone revokes its tokens with it.
func (a *ApplicationCredentials) Delete(ctx context.Context, id string) error {
	if err := applicationcredentials.Delete(ctx, a.identity, a.userID, id).ExtractErr(); err != nil {
		return fmt.Errorf("deleting application credential %s: %w", id, err)
	}
	return nil
}

// SetApplicationCredential puts an application credential into the cloudprovider Secret,
// as gardener writes the Shoot's rotated credentials there.
func SetApplicationCredential(ctx context.Context, c client.Client, id, secret string) error {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: CloudProviderSecretName}, s); err != nil {
		return fmt.Errorf("reading the Secret %s: %w", CloudProviderSecretName, err)
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Data["applicationCredentialID"] = []byte(id)
	s.Data["applicationCredentialSecret"] = []byte(secret)
	if err := c.Patch(ctx, s, patch); err != nil {
		return fmt.Errorf("writing the application credential into the Secret %s: %w", CloudProviderSecretName, err)
	}
	return nil
}
