// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

func TestIngressNeverShowsThePrivateVIPOfAPublicExposure(t *testing.T) {
	// A public exposure whose floating IP is not allocated yet (e.g. quota) reports nothing.
	s := &v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10", PortID: "p"}
	if got := ingressOf(s, false); got != "" {
		t.Errorf("public exposure without a floating IP reports %q, want nothing", got)
	}
	if got := ingressOf(s, true); got != "198.18.0.10" {
		t.Errorf("internal exposure reports %q, want its VIP", got)
	}
	s.Ingress = "198.19.0.5"
	if got := ingressOf(s, false); got != "198.19.0.5" {
		t.Errorf("once published, the ingress is %q, want the recorded 198.19.0.5", got)
	}
}

func TestKeyedLocksSerialise(t *testing.T) {
	var (
		l       keyedLocks[types.UID]
		wg      sync.WaitGroup
		mu      sync.Mutex
		inside  int
		overlap bool
	)
	for range 8 {
		wg.Go(func() {
			unlock := l.lock("uid-1")
			mu.Lock()
			inside++
			overlap = overlap || inside > 1
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		})
	}
	// Another exposure is not blocked by uid-1.
	unlockOther := l.lock("uid-2")
	unlockOther()
	wg.Wait()
	if overlap {
		t.Error("two holders of the same exposure lock at once")
	}
	if len(l.locks) != 0 {
		t.Errorf("%d lock entries left after all were released", len(l.locks))
	}
}

func TestFinishBacksOffWhileAgentPodsRemain(t *testing.T) {
	a := &Actuator{opts: ActuatorOptions{MinBackoff: time.Second, MaxBackoff: 4 * time.Second}, failures: map[types.UID]int{}}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	var delays []time.Duration
	for range 4 {
		var requeue *reconcilerutils.RequeueAfterError
		if err := a.finish(exp, errAgentPodsRemain); !errors.As(err, &requeue) {
			t.Fatalf("got %v, want a requeue", err)
		} else {
			delays = append(delays, requeue.RequeueAfter)
		}
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
}
