// The production profile's Temporal server: go.temporal.io/server v1.29.1, as its own cmd/server starts it,
// with one difference: callers are authorized by the client certificate they present, with the policy of
// identities.yaml beside config.yaml (see the identity package). Built by scripts/stack/temporal-server.ts
// and by this folder's Dockerfile for compose.
//
//	server --root / --config /etc/temporal --env config start
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // the zone database, for schedules, on images without one

	"expiry-reminder/temporal-server/identity"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/temporal"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	flags := flag.NewFlagSet("server", flag.ExitOnError)
	root := flags.String("root", ".", "root directory of the configuration")
	configDir := flags.String("config", "config", "configuration folder, relative to --root")
	env := flags.String("env", "development", "configuration environment (loads <config>/<env>.yaml)")
	zone := flags.String("zone", "", "availability zone")
	_ = flags.Parse(os.Args[1:])
	if flags.NArg() != 1 || flags.Arg(0) != "start" {
		fail("usage: server --root / --config <folder> --env <name> start")
	}
	dir := filepath.Join(*root, *configDir)

	cfg, err := config.LoadConfig(*env, dir, *zone)
	if err != nil {
		fail("Unable to load configuration: %v.", err)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))

	identitiesFile := filepath.Join(dir, "identities.yaml")
	namespace := os.Getenv("TEMPORAL_NAMESPACE")
	if namespace == "" {
		namespace = "default"
	}
	policy, err := identity.Load(identitiesFile, namespace)
	if err != nil {
		fail("Unable to load the identities: %v.", err)
	}
	logger.Info("Callers authorized by their client certificate.",
		tag.NewStringTag("identities-file", identitiesFile), tag.NewStringTag("grants", policy.Describe()))

	var dynamicConfigClient dynamicconfig.Client = dynamicconfig.NewNoopClient()
	if cfg.DynamicConfigClient != nil {
		dynamicConfigClient, err = dynamicconfig.NewFileBasedClient(cfg.DynamicConfigClient, logger, temporal.InterruptCh())
		if err != nil {
			fail("Unable to create dynamic config client. Error: %v", err)
		}
	}

	s, err := temporal.NewServer(
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithConfig(cfg),
		temporal.WithDynamicConfigClient(dynamicConfigClient),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(identity.NewAuthorizer(logger)),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return policy }),
	)
	if err != nil {
		fail("Unable to create server. Error: %v.", err)
	}
	if err := s.Start(); err != nil {
		fail("Unable to start server. Error: %v", err)
	}
}
