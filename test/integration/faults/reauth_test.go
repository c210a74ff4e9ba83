// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/pagination"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
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
	var user *users.User
	keystone(t, ctx, "creating the user", func(ctx context.Context) (err error) {
		user, err = users.Create(ctx, identity, users.CreateOpts{Name: name, Password: password, DomainID: "default"}).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
			// An earlier attempt committed before its connection was reset.
			var pages pagination.Page
			if pages, err = users.List(identity, users.ListOpts{Name: name}).AllPages(ctx); err == nil {
				var found []users.User
				if found, err = users.ExtractUsers(pages); err == nil && len(found) == 1 {
					user = &found[0]
				}
			}
		}
		return err
	})
	t.Cleanup(func() { _ = users.Delete(context.Background(), identity, user.ID).ExtractErr() })
	var member []roles.Role
	keystone(t, ctx, "reading the member role", func(ctx context.Context) error {
		pages, err := roles.List(identity, roles.ListOpts{Name: "member"}).AllPages(ctx)
		if err == nil {
			member, err = roles.ExtractRoles(pages)
		}
		return err
	})
	if len(member) != 1 {
		t.Fatalf("member roles: %v", member)
	}
	keystone(t, ctx, "assigning the member role", func(ctx context.Context) error {
		return roles.Assign(ctx, identity, member[0].ID, roles.AssignOpts{UserID: user.ID, ProjectID: e.os.ProjectID}).ExtractErr()
	})

	secret := copySecret(t, ctx, e, "reauth", map[string]string{openstack.KeyUserName: name, openstack.KeyPassword: password})
	exp, _ := createExposure(t, ctx, e, useSecret(secret.Name), true)

	// Keystone revokes the user's tokens with the change; the Secret still has the old one.
	second := "second-" + rand.String(12)
	keystone(t, ctx, "changing the password", func(ctx context.Context) error {
		return users.Update(ctx, identity, user.ID, users.UpdateOpts{Password: second}).Err
	})
	// Whatever happens below, the delete in createExposure's cleanup (which runs after this
	// one) needs the password Keystone has now.
	t.Cleanup(func() { setPassword(t, e, secret, second) })
	// Neutron keeps accepting the revoked token until its validation cache (hack/openstack.sh:
	// token_cache_time 5 s) lets it go.
	time.Sleep(neutronTokenCache + time.Second)
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

	// The operator then puts the new password into the Secret: the exposure recovers without
	// waiting out the backoff (the Secret's version is an input), and its delete can clean up.
	setPassword(t, e, secret, second)
	(&observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}).poll(ctx, "the exposure to succeed with the new password", succeeded)
}

// setPassword puts password into the Secret.
func setPassword(t *testing.T, e *sharedEnv, secret *corev1.Secret, password string) {
	t.Helper()
	current := &corev1.Secret{}
	if err := e.cp.Client.Get(context.Background(), client.ObjectKeyFromObject(secret), current); err != nil {
		t.Errorf("reading Secret %s: %v", secret.Name, err)
		return
	}
	current.Data[openstack.KeyPassword] = []byte(password)
	if err := e.cp.Client.Update(context.Background(), current); err != nil {
		t.Errorf("updating Secret %s: %v", secret.Name, err)
	}
}

// neutronTokenCache is the local Neutron's keystonemiddleware token_cache_time.
const neutronTokenCache = 5 * time.Second

// keystone runs an admin call, again while the local Keystone's uwsgi resets connections
// under load.
func keystone(t *testing.T, ctx context.Context, what string, call func(context.Context) error) {
	t.Helper()
	var err error
	if pollErr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err = call(ctx)
		return err == nil, nil
	}); pollErr != nil {
		t.Fatalf("%s: %v", what, errors.Join(err, pollErr))
	}
}

// keystoneAdmin is an identity client of the local cloud's admin.
func keystoneAdmin(t *testing.T, ctx context.Context, e *sharedEnv) *gophercloud.ServiceClient {
	t.Helper()
	var pc *gophercloud.ProviderClient
	keystone(t, ctx, "authenticating as the admin", func(ctx context.Context) (err error) {
		pc, err = gopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.os.AuthURL, Username: e.os.AdminUsername, Password: e.os.AdminPassword,
			DomainName: e.os.DomainName, TenantName: e.os.AdminProjectName})
		return err
	})
	identity, err := gopenstack.NewIdentityV3(pc, gophercloud.EndpointOpts{Region: e.os.Region})
	if err != nil {
		t.Fatal(err)
	}
	return identity
}
