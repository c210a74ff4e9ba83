// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package foundation

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestApplicationCredentialRotation rotates as an operator does, on the local Keystone: a
// new application credential authenticates, the deleted one no more. The lifecycle's
// rotation step stands on these calls.
func TestApplicationCredentialRotation(t *testing.T) {
	env := framework.OpenStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	creds, err := env.ApplicationCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	suffix := framework.UniqueTechnicalID("")
	oldID, oldSecret, err := creds.Create(ctx, "kube-vip-foundation-old-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	newID, newSecret, err := creds.Create(ctx, "kube-vip-foundation-new-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := creds.Delete(context.Background(), newID); err != nil {
			t.Error(err)
		}
	})
	login := func(id, secret string) error {
		_, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
			IdentityEndpoint: env.AuthURL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret,
		})
		return err
	}
	if err := login(oldID, oldSecret); err != nil {
		t.Fatalf("logging in with the old credential: %v", err)
	}
	if err := creds.Delete(ctx, oldID); err != nil {
		t.Fatal(err)
	}
	if err := login(newID, newSecret); err != nil {
		t.Errorf("logging in with the new credential: %v", err)
	}
	if err := login(oldID, oldSecret); err == nil {
		t.Error("the deleted credential still logs in")
	}
}
