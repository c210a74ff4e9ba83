// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/gardener/gardener-extension-kube-vip/charts"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
)

const (
	// ExtensionName is the name of the extension (Extension / ControllerRegistration).
	ExtensionName = "kube-vip"
	// DefaultExtensionType is the SelfHostedShootExposure type served by default.
	DefaultExtensionType = "kube-vip"
	// DefaultVerifyInterval is how long an unchanged exposure's OpenStack resources are trusted
	// (exposure.DefaultVerifyInterval).
	DefaultVerifyInterval = exposure.DefaultVerifyInterval

	// ExtensionTypeFlag is the flag for the served extension type.
	ExtensionTypeFlag = "extension-type"
	// AgentImageFlag is the flag for the image of the node agent.
	AgentImageFlag = "agent-image"
	// KubeVIPImageFlag is the flag for the default image of upstream kube-vip.
	KubeVIPImageFlag = "kube-vip-image"
	// VerifyIntervalFlag is the flag for the verification interval.
	VerifyIntervalFlag = "verify-interval"
	// FrontDoorProbeFlag is the flag for how the front door is checked before Succeeded.
	FrontDoorProbeFlag = "front-door-probe"
	// NodeNameFlag is the flag for the node the controller runs on.
	NodeNameFlag = "node-name"
)

// ExtensionOptions are the command line options of this extension that gardener's
// controllercmd does not provide.
type ExtensionOptions struct {
	// Type is the SelfHostedShootExposure type this controller serves.
	Type string
	// AgentImage is the image of the kube-vip-agent DaemonSet. Empty: the image vector's
	// kube-vip-agent image (charts/images.yaml, overridable by $IMAGEVECTOR_OVERWRITE).
	AgentImage string
	// KubeVIPImage is the default image of the upstream kube-vip DaemonSet. Empty: the image
	// vector's kube-vip image.
	KubeVIPImage string
	// VerifyInterval: a healthy exposure is requeued after this and reads its OpenStack
	// resources back (repairing drift); in between, an endpoints-only or unchanged
	// reconciliation makes no OpenStack call.
	VerifyInterval time.Duration
	// FrontDoorProbe: tcp (a ready agent holds the Lease and VIP:port accepts a TCP
	// connection from the controller), lease (the Lease only, for a controller that
	// cannot reach the node network) or off (tests of the controller without agents).
	FrontDoorProbe string
	// NodeName is the node the controller runs on (the chart passes the downward API's
	// spec.nodeName). Empty: unknown.
	NodeName string

	config *ExtensionConfig
}

// ExtensionConfig is the completed configuration of ExtensionOptions.
type ExtensionConfig struct {
	// Type is the SelfHostedShootExposure type this controller serves.
	Type string
	// AgentImage is the image of the kube-vip-agent DaemonSet.
	AgentImage string
	// KubeVIPImage is the default image of the upstream kube-vip DaemonSet.
	KubeVIPImage string
	// VerifyInterval: a healthy exposure is requeued after this and reads its OpenStack
	// resources back (repairing drift); in between, an endpoints-only or unchanged
	// reconciliation makes no OpenStack call.
	VerifyInterval time.Duration
	// FrontDoorProbe, see ExtensionOptions.
	FrontDoorProbe exposure.FrontDoorProbe
	// NodeName, see ExtensionOptions.
	NodeName string
}

// AddFlags implements controllercmd.Flagger.
func (o *ExtensionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Type, ExtensionTypeFlag, DefaultExtensionType, "The SelfHostedShootExposure type this controller serves.")
	fs.StringVar(&o.AgentImage, AgentImageFlag, "", "Image of the kube-vip-agent DaemonSet deployed on the control-plane nodes (default: the image vector's "+charts.ImageNameAgent+" image).")
	fs.StringVar(&o.KubeVIPImage, KubeVIPImageFlag, "", "Default image of upstream kube-vip, for exposures with agent.implementation kube-vip that set no agent.image (default: the image vector's "+charts.ImageNameKubeVip+" image).")
	fs.DurationVar(&o.VerifyInterval, VerifyIntervalFlag, DefaultVerifyInterval, "A healthy exposure is requeued after this and reads its OpenStack resources back, repairing drift (at most three reads and no write when nothing drifted). gardener.cloud/operation=reconcile on an unchanged exposure verifies at once.")
	fs.StringVar(&o.FrontDoorProbe, FrontDoorProbeFlag, string(exposure.FrontDoorTCP), "How the front door is checked before an exposure reports Succeeded: tcp (a ready agent holds the Lease and the VIP accepts a TCP connection on spec.port from the controller), lease (the Lease only, for a controller that cannot reach the node network), or off (not checked; only for tests of the controller that run no agent).")
	fs.StringVar(&o.NodeName, NodeNameFlag, "", "The node this controller runs on. With it, the status says whether a door published without a floating IP (an IPv6 or internal-only VIP) was reached across the node network or only on the node that holds it.")
}

// Complete implements controllercmd.Completer.
func (o *ExtensionOptions) Complete() error {
	var errs []error
	if o.Type == "" {
		errs = append(errs, fmt.Errorf("--%s must not be empty", ExtensionTypeFlag))
	}
	agentImage := o.AgentImage
	if agentImage == "" {
		image, err := charts.FindImage(charts.ImageNameAgent)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s is not set and the image vector has no agent image: %w", AgentImageFlag, err))
		}
		agentImage = image
	}
	kubeVIPImage := o.KubeVIPImage
	if kubeVIPImage == "" {
		image, err := charts.FindImage(charts.ImageNameKubeVip)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s is not set and the image vector has no kube-vip image: %w", KubeVIPImageFlag, err))
		}
		kubeVIPImage = image
	}
	if o.VerifyInterval <= 0 {
		errs = append(errs, fmt.Errorf("--%s must be positive, got %s", VerifyIntervalFlag, o.VerifyInterval))
	}
	switch exposure.FrontDoorProbe(o.FrontDoorProbe) {
	case exposure.FrontDoorTCP, exposure.FrontDoorLease, exposure.FrontDoorOff:
	default:
		errs = append(errs, fmt.Errorf("--%s must be %q, %q or %q, got %q", FrontDoorProbeFlag, exposure.FrontDoorTCP, exposure.FrontDoorLease, exposure.FrontDoorOff, o.FrontDoorProbe))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	o.config = &ExtensionConfig{Type: o.Type, AgentImage: agentImage, KubeVIPImage: kubeVIPImage, VerifyInterval: o.VerifyInterval,
		FrontDoorProbe: exposure.FrontDoorProbe(o.FrontDoorProbe), NodeName: o.NodeName}
	return nil
}

// Completed returns the completed configuration. Only call it after Complete succeeded.
func (o *ExtensionOptions) Completed() *ExtensionConfig {
	return o.config
}
