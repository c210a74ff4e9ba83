// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// TestPasswordChangedInKeystoneIsUnauthenticated: the exposure's user gets a new password
// in Keystone before the Secret does. Keystone revokes the user's tokens, the controller's
// cached client tries to log in again with the old password and is rejected: that is
// ERR_INFRA_UNAUTHENTICATED (with the backoff of a rejected password), not "OpenStack
// could not be reached".
func TestPasswordChangedInKeystoneIsUnauthenticated(t *testing.T) {
	e, ctx := begin(t, true)
	if e.os.AdminPassword == "" {
		t.Skip("the OpenStack env names no admin")
	}
	identity := keystoneAdmin(t, ctx, e)
	name, password := "kv-reauth-"+rand.String(6), "first-"+rand.String(12)
	user, err := users.Create(ctx, identity, users.CreateOpts{Name: name, Password: password, DomainID: "default"}).Extract()
	if err != nil {
		t.Fatalf("creating the user: %v", err)
	}
	t.Cleanup(func() { _ = users.Delete(context.Background(), identity, user.ID).ExtractErr() })
	pages, err := roles.List(identity, roles.ListOpts{Name: "member"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	member, err := roles.ExtractRoles(pages)
	if err != nil || len(member) != 1 {
		t.Fatalf("the member role: %v %v", member, err)
	}
	if err := roles.Assign(ctx, identity, member[0].ID, roles.AssignOpts{UserID: user.ID, ProjectID: e.os.ProjectID}).ExtractErr(); err != nil {
		t.Fatalf("assigning the member role: %v", err)
	}

	secret := copySecret(t, ctx, e, "reauth", map[string]string{openstack.KeyUserName: name, openstack.KeyPassword: password})
	exp, _ := createExposure(t, ctx, e, useSecret(secret.Name), true)

	// Keystone revokes the user's tokens with the change; the Secret still has the old one.
	if err := users.Update(ctx, identity, user.ID, users.UpdateOpts{Password: "second-" + rand.String(12)}).Err; err != nil {
		t.Fatalf("changing the password: %v", err)
	}
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(current.DeepCopy())
	metav1.SetMetaDataAnnotation(&current.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	if err := e.cp.Client.Patch(ctx, current, patch); err != nil {
		t.Fatal(err)
	}
	last := waitLastError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraUnauthenticated)
	t.Logf("lastError after the password change: %s %v", last.Description, last.Codes)
	if strings.Contains(last.Description, "could not be reached") {
		t.Errorf("lastError %q reports an unreachable OpenStack for a rejected login", last.Description)
	}
}

// keystoneAdmin is an identity client of the local cloud's admin.
func keystoneAdmin(t *testing.T, ctx context.Context, e *sharedEnv) *gophercloud.ServiceClient {
	t.Helper()
	pc, err := gopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.os.AuthURL, Username: e.os.AdminUsername, Password: e.os.AdminPassword,
		DomainName: e.os.DomainName, TenantName: e.os.AdminProjectName})
	if err != nil {
		t.Fatalf("authenticating as the admin: %v", err)
	}
	identity, err := gopenstack.NewIdentityV3(pc, gophercloud.EndpointOpts{Region: e.os.Region})
	if err != nil {
		t.Fatal(err)
	}
	return identity
}
