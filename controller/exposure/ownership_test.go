package exposure

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
)

func TestPickFloatingIPOnlyOwned(t *testing.T) {
	const id = "shoot--p--c"
	user := floatingips.FloatingIP{ID: "user", FloatingIP: "198.19.0.10", Description: "pre-allocated by the user"}
	other := floatingips.FloatingIP{ID: "other", FloatingIP: "198.19.0.11", Description: ownerDescription("shoot--p--other")}
	ours1 := floatingips.FloatingIP{ID: "ours1", FloatingIP: "198.19.0.12", Description: ownerDescription(id)}
	ours2 := floatingips.FloatingIP{ID: "ours2", FloatingIP: "198.19.0.13", Description: ownerDescription(id)}

	if got := pickFloatingIP([]floatingips.FloatingIP{user, other}, id, "user"); got != nil {
		t.Errorf("picked %s, a floating IP the extension did not create for this cluster", got.ID)
	}
	if got := pickFloatingIP([]floatingips.FloatingIP{user, ours1, ours2}, id, ""); got == nil || got.ID != "ours1" {
		t.Errorf("picked %v, want ours1", got)
	}
	if got := pickFloatingIP([]floatingips.FloatingIP{user, ours1, ours2}, id, "ours2"); got == nil || got.ID != "ours2" {
		t.Errorf("picked %v, want the preferred ours2", got)
	}
}

func TestExposureLocksSerialise(t *testing.T) {
	var (
		l       exposureLocks
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
