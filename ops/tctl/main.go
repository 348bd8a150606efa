// The legacy tctl CLI, built from github.com/temporalio/tctl v1.18.0: the newest version the Go module
// proxy serves here (it refuses v1.18.1 to v1.18.4). `go install module@version` cannot take a version
// the proxy refuses, and a go.mod of our own can pin one it serves, so this module holds tctl's entry
// point. scripts/build-tctl.sh builds it; docs/TCTL.md says why tctl at all.
package main

import (
	"log"
	"os"

	"github.com/temporalio/tctl/cli"
	"github.com/temporalio/tctl/cli_curr"
	"github.com/temporalio/tctl/config"
)

func main() {
	// As tctl's own main: `tctl config set version next` selects the next-generation command set, which
	// is built on another CLI library (urfave/cli v2), hence two apps of different types.
	settings, _ := config.NewTctlConfig()
	var err error
	if settings.Version == "next" || settings.Version == "2" {
		err = cli.NewCliApp().Run(os.Args)
	} else {
		err = cli_curr.NewCliApp().Run(os.Args)
	}
	if err != nil {
		log.Fatal(err)
	}
}
