// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command localenv runs the local development environment's Kubernetes side: etcd and
// kube-apiserver on loopback (envtest) with Gardener's CRDs and the Gardener objects of a
// self-hosted OpenStack shoot, whose OpenStack IDs come from hack/openstack.sh's env file.
// It writes an admin kubeconfig once everything is in place, and on SIGTERM or SIGINT
// removes the kubeconfig and stops what it started. hack/local-env.sh runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

type options struct {
	kubeconfig   string
	openstackEnv string
	credentials  string
}

func main() {
	log := zap.New(zap.UseDevMode(false), zap.WriteTo(os.Stderr))
	var o options
	// An own flag set: controller-runtime registers --kubeconfig on the global one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", ".local/kubeconfig", "where to write the admin kubeconfig once ready")
	fs.StringVar(&o.openstackEnv, "openstack-env", "", "env file of hack/openstack.sh (default: $"+framework.EnvFileVariable+" or .local/openstack/env.sh)")
	fs.StringVar(&o.credentials, "credentials", "application-credential", "credential form in the cloudprovider Secret: application-credential or password")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, log, o); err != nil {
		log.Error(err, "local environment failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, log logr.Logger, o options) error {
	creds := framework.ApplicationCredential
	switch o.credentials {
	case "application-credential":
	case "password":
		creds = framework.Password
	default:
		return fmt.Errorf("unknown --credentials %q", o.credentials)
	}
	envFile := o.openstackEnv
	if envFile == "" {
		var err error
		if envFile, err = framework.OpenStackEnvFile(); err != nil {
			return err
		}
	}
	osEnv, err := framework.LoadOpenStackEnv(envFile)
	if err != nil {
		return fmt.Errorf("reading OpenStack env (run hack/openstack.sh up): %w", err)
	}

	start := time.Now()
	cp, err := framework.NewControlPlane()
	if err != nil {
		return err
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			log.Error(err, "stopping the control plane")
		}
		log.Info("stopped")
	}()
	log.Info("kube-apiserver started", "host", cp.Config.Host, "after", time.Since(start).Round(time.Millisecond))

	bootstrapCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := framework.Bootstrap(bootstrapCtx, cp.Client, osEnv.BootstrapOptions(creds)); err != nil {
		return err
	}
	kubeconfig, err := cp.AdminKubeconfig()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(o.kubeconfig, kubeconfig); err != nil {
		return err
	}
	defer func() {
		if err := os.Remove(o.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Error(err, "removing kubeconfig")
		}
	}()
	log.Info("ready", "kubeconfig", o.kubeconfig, "after", time.Since(start).Round(time.Millisecond))

	<-ctx.Done()
	log.Info("stopping")
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating directory of %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}
