#!/usr/bin/env bash
# Validates docker-compose.yml, and docker-compose.support.yml (a support desk's `explain`, a file of its own),
# without a Docker engine; run from CI or by hand:
#   scripts/check-compose.sh
# 1. docker-compose config -q        the Compose file, as Debian's docker-compose (1.29) loads it
# 2. compose-go (when Go is on PATH)  the same file through the loader of Docker Compose v2, with its
#                                     JSON Schema (github.com/compose-spec/compose-go, built once into
#                                     ~/.cache/expiry-reminder)
# 3. the Dockerfiles it builds        BuildKit's parser and instruction linter (github.com/moby/buildkit,
#                                     when Go is on PATH, built once likewise): no engine is needed
# 4. consistency with the project:
#    - every variable given to the app's services is one src/config reads, or one of the standard
#      TEMPORAL_* connection variables that @temporalio/envconfig reads for it (src/config/temporal-profile.ts)
#    - every `node dist/<x>.js` command has its src/<x>.ts
#    - Prometheus scrape targets (ops/prometheus/prometheus.yml) are compose services, on the
#      METRICS_PORT those services are given; Grafana's datasource points at the prometheus service
#    - bind-mounted files exist
#    - the production profile's configuration files (PRODUCTION_CONFIG_FILES of
#      scripts/stack/production-files.ts, the list the stack itself takes its paths from) are each
#      bind-mounted, and each service that mounts one names its path (or folder) in its command or
#      environment; no other file of ops/{tls,postgres,temporal,temporal-ui,kafka} is mounted, and no
#      service mounts another file in place of one of them (at its container path, or by its file name)
#    - long-running services have a health check, one-shot jobs do not restart
#    - the namespace the app services use is the one temporal-namespace registers
#    - the Kafka image is the release of ops/kafka/pom.xml, and kafka-acls grants the topic of
#      src/domain/names.ts
# 5. secrets (scripts/check-compose-secrets.ts, on both files as written): each container mounts its own
#    keys only (a table of container -> the certificate files it may see), and no command, entrypoint or
#    health check passes a password as an argument (readable by anyone on the host in ps)
# The support file goes through steps 1, 2 and 4 with an environment of SUPPORT_DB_PASSWORD alone (what a
# support desk's .env holds: it must load), and without it (it must fail, naming it): step 1 without its
# top-level `name`, which docker-compose 1.29 does not know (the file is for Docker Compose v2).
# docker-compose comes from PATH; when it is missing and we run as root, Debian's `docker-compose`
# package is installed (it also brings python3-yaml, which step 4 uses).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

compose=docker-compose.yml
support_compose=docker-compose.support.yml
compose_go_version=v2.9.0
buildkit_version=v0.23.2

if ! command -v docker-compose >/dev/null 2>&1; then
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "docker-compose not found; installing Debian's docker-compose package" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  else
    echo "error: docker-compose not found on PATH." >&2
    echo "  Install it (Debian/Ubuntu: sudo apt-get install --no-install-recommends docker-compose)" >&2
    echo "  and re-run; run as root on Debian and this script installs it itself." >&2
    exit 1
  fi
fi

# Interpolation must not depend on whoever runs this: the file's own defaults only, and placeholders for
# the passwords it requires (it has no defaults for them).
required_vars=(POSTGRES_PASSWORD TEMPORAL_POSTGRES_PASSWORD WORKER_DB_PASSWORD RELAY_DB_PASSWORD SUPPORT_DB_PASSWORD TEMPORAL_DB_PASSWORD BROKER_SCRAM_PASSWORD
  BROKER_ADMIN_PASSWORD RELAY_SCRAM_PASSWORD BUILD_ID)
unset_vars=(EXPIRY_REMINDER_IMAGE LOG_LEVEL TEMPORAL_LOG_LEVEL GRAFANA_ADMIN_PASSWORD DATABASE_POOL_SIZE DATABASE_STATEMENT_TIMEOUT DATABASE_IDLE_IN_TRANSACTION_TIMEOUT
  DATABASE_TCP_KEEPALIVE_IDLE REMINDER_THRESHOLDS_DAYS REMINDER_BATCH_SIZE
  REMINDER_RETENTION_DAYS REMINDER_MAX_RUN_DURATION REMINDER_POLLING_INTERVAL REMINDER_POLLING_OFFSET
  REMINDER_OWNER_CONCURRENCY REMINDER_OWNER_GROUP_SIZE REMINDER_SCAN_SLICES REMINDER_PARTITIONS REMINDER_PARTITION_SIZE REMINDER_MAX_HISTORY_EVENTS
  OTEL_EXPORTER_OTLP_ENDPOINT)
clean_env=(env)
for v in "${unset_vars[@]}"; do clean_env+=(-u "$v"); done
for v in "${required_vars[@]}"; do clean_env+=("$v=check-compose-placeholder"); done

echo "== $(docker-compose version --short 2>/dev/null | sed 's/^/docker-compose /')"

echo "== docker-compose -f $compose config -q"
"${clean_env[@]}" docker-compose -f "$compose" config -q
echo "  SUCCESS: valid for docker-compose $(docker-compose version --short 2>/dev/null)"

# The support file's environment: SUPPORT_DB_PASSWORD or nothing, never the caller's variables or an .env.
support_env=(env -i "PATH=$PATH" "HOME=$HOME")
no_env_file="$(mktemp)"
trap 'rm -f "$no_env_file"' EXIT
# expect_refusal <what> <command...>: the command fails and its output names SUPPORT_DB_PASSWORD.
expect_refusal() {
  local what="$1" out
  shift
  if out="$("$@" 2>&1)"; then
    echo "  FAILED: $what loads without SUPPORT_DB_PASSWORD" >&2
    exit 1
  fi
  if [[ "$out" != *"SUPPORT_DB_PASSWORD"* ]]; then
    echo "  FAILED: $what fails without SUPPORT_DB_PASSWORD, but does not name it: $out" >&2
    exit 1
  fi
}
support_v1() { grep -v '^name:' "$support_compose" | "$@" docker-compose --env-file "$no_env_file" -f - config -q; }

echo "== docker-compose config -q: $support_compose (without its name), with SUPPORT_DB_PASSWORD alone"
support_v1 "${support_env[@]}" SUPPORT_DB_PASSWORD=check-compose-placeholder
expect_refusal "$support_compose" support_v1 "${support_env[@]}"
echo "  SUCCESS: loads with SUPPORT_DB_PASSWORD alone; refused without it, naming it"

# Builds a small Go program against one pinned module into ~/.cache/expiry-reminder/<name> (once; again
# only when the module version or the program changes) and prints the binary's path.
go_tool() {
  local name="$1" module="$2" source_go="$3"
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/expiry-reminder/$name"
  mkdir -p "$dir"
  if [[ ! -x "$dir/tool" ]] || [[ "$(cat "$dir/main.go" 2>/dev/null)" != "$source_go" ]]; then
    echo "  building $module into $dir (once)" >&2
    printf '%s\n' "$source_go" >"$dir/main.go"
    printf 'module %s\n\ngo 1.23\n' "$name" >"$dir/go.mod"
    if ! (cd "$dir" && go get "$module" && go mod tidy && go build -o tool .) >"$dir/build.log" 2>&1; then
      cat "$dir/build.log" >&2
      echo "error: could not build $module with $(go version) (needs the Go module proxy)" >&2
      rm -f "$dir/tool"
      return 1
    fi
  fi
  echo "$dir/tool"
}

echo "== compose-go $compose_go_version (the loader of Docker Compose v2)"
if command -v go >/dev/null 2>&1; then
  tool="$(go_tool "compose-go-$compose_go_version" "github.com/compose-spec/compose-go/v2@$compose_go_version" "$(cat <<'GO'
// Loads a Compose file the way Docker Compose v2 does (interpolation from the environment, merge keys,
// JSON Schema).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	opts, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithName("expiry-reminder"), cli.WithWorkingDirectory("."), cli.WithOsEnv)
	if err == nil {
		var project interface{ ServiceNames() []string }
		project, err = opts.LoadProject(context.Background())
		if err == nil {
			fmt.Printf("  SUCCESS: %d services outside profiles\n", len(project.ServiceNames()))
			return
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
GO
)")"
  "${clean_env[@]}" "$tool" "$compose"
  echo "  $support_compose, with SUPPORT_DB_PASSWORD alone"
  "${support_env[@]}" SUPPORT_DB_PASSWORD=check-compose-placeholder "$tool" "$support_compose"
  # The message test/unit/compose-support.test.ts expects of its port of this loader's interpolation.
  refusal="error while interpolating services.support.environment.SUPPORT_DATABASE_URL: required variable"
  refusal+=" SUPPORT_DB_PASSWORD is missing a value: set SUPPORT_DB_PASSWORD (role expiry_reminder_support) in .env"
  if out="$("${support_env[@]}" "$tool" "$support_compose" 2>&1)" || [[ "$out" != "$refusal" ]]; then
    echo "  FAILED: without SUPPORT_DB_PASSWORD, expected: $refusal" >&2
    echo "  got: $out" >&2
    exit 1
  fi
  echo "  refused without it: $out"
else
  echo "  SKIPPED: go not on PATH"
fi

echo "== Dockerfiles: BuildKit $buildkit_version parser and linter (what docker build --check runs)"
if command -v go >/dev/null 2>&1; then
  tool="$(go_tool "buildkit-$buildkit_version" "github.com/moby/buildkit@$buildkit_version" "$(cat <<'GO'
// Parses a Dockerfile with BuildKit's own parser and runs its instruction linter; any warning fails.
package main

import (
	"fmt"
	"os"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	res, err := parser.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parse:", err)
		os.Exit(1)
	}
	problems := 0
	for _, w := range res.Warnings {
		fmt.Fprintln(os.Stderr, "  parser:", w.Short)
		problems++
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		fmt.Fprintf(os.Stderr, "  %s: %s (line %d)\n", rule, msg, loc[0].Start.Line)
		problems++
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		fmt.Fprintln(os.Stderr, "instructions:", err)
		os.Exit(1)
	}
	if problems > 0 {
		os.Exit(1)
	}
	fmt.Printf("  SUCCESS: %d stages:", len(stages))
	for _, s := range stages {
		fmt.Printf(" %s", s.Name)
	}
	fmt.Println()
}
GO
)")"
  for dockerfile in Dockerfile ops/temporal/server/Dockerfile; do
    echo "  $dockerfile"
    "$tool" "$dockerfile"
  done
else
  echo "  SKIPPED: go not on PATH"
fi

echo "== consistency with src/, ops/"
"${clean_env[@]}" docker-compose -f "$compose" config >/tmp/check-compose.$$.yml
trap 'rm -f /tmp/check-compose.$$.yml "$no_env_file"' EXIT
python3 - /tmp/check-compose.$$.yml "$support_compose" <<'PY'
import os, re, sys
import yaml

resolved = yaml.safe_load(open(sys.argv[1]))
services = resolved["services"]
problems = []
notes = []

# Variables src/config reads: the keys of `export const schema = z.object({ ... })` in src/config/schema.ts.
config_src = open("src/config/schema.ts").read()
block = re.search(r"^export const schema = z\.object\(\{\n(.*?)^\}\);", config_src, re.S | re.M)
if not block:
    sys.exit("  cannot find `export const schema = z.object({` in src/config/schema.ts")
known_vars = set(re.findall(r"^  ([A-Z][A-Z0-9_]*):", block.group(1), re.M))
# The Temporal connection (address, TLS files, server name) is read by @temporalio/envconfig through
# loadTemporalProfile (src/config/temporal-profile.ts): its variables, from the installed package.
envconfig_js = "node_modules/@temporalio/envconfig/lib/envconfig-toml.js"
if not os.path.isfile(envconfig_js):
    sys.exit(f"  {envconfig_js} is missing: run npm ci first")
envconfig_vars = set(re.findall(r"['\"](TEMPORAL_[A-Z_]*[A-Z])['\"]", open(envconfig_js).read()))
known_vars |= envconfig_vars

def env_of(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return env

def build_context(svc):
    build = svc.get("build")
    return build.get("context") if isinstance(build, dict) else build
# The app image is the repository's Dockerfile; the Temporal server's image is built from ops/temporal/server.
app_services = {name: svc for name, svc in services.items() if build_context(svc) is not None and os.path.relpath(os.path.abspath(build_context(svc))) == "."}
for name, svc in sorted(app_services.items()):
    for var in sorted(env_of(svc)):
        if var not in known_vars:
            problems.append(f"{name}: {var} is not a variable of src/config")
    command = (svc.get("entrypoint") or []) + (svc.get("command") or [])
    for arg in command:
        m = re.fullmatch(r"dist/(.+)\.js", arg)
        if m and not os.path.isfile(f"src/{m.group(1)}.ts"):
            problems.append(f"{name}: runs {arg}, but src/{m.group(1)}.ts does not exist")
notes.append(f"{len(app_services)} app services use only variables of src/config and @temporalio/envconfig")

# Prometheus targets → services and their METRICS_PORT.
prom = yaml.safe_load(open("ops/prometheus/prometheus.yml"))
targets = 0
for job in prom.get("scrape_configs", []):
    for sc in job.get("static_configs", []):
        for target in sc.get("targets", []):
            host, _, port = target.rpartition(":")
            if host == "localhost":
                continue
            targets += 1
            if host not in services:
                problems.append(f"prometheus job {job['job_name']}: target {target}: no service {host!r}")
                continue
            metrics_port = str(env_of(services[host]).get("METRICS_PORT", ""))
            if host in app_services and metrics_port != port:
                problems.append(f"prometheus job {job['job_name']}: target {target}, but {host} has METRICS_PORT={metrics_port or '(unset)'}")
notes.append(f"{targets} Prometheus targets match services and ports")

for ds in yaml.safe_load(open("ops/grafana/provisioning/datasources.yml")).get("datasources", []):
    host = re.sub(r"^\w+://", "", ds.get("url", "")).split(":")[0].split("/")[0]
    if host not in services:
        problems.append(f"grafana datasource {ds.get('name')}: url {ds.get('url')} names no service")

# Bind mounts.
for name, svc in services.items():
    for vol in svc.get("volumes") or []:
        source = vol.get("source") if isinstance(vol, dict) else vol.split(":")[0]
        kind = vol.get("type") if isinstance(vol, dict) else ("bind" if source.startswith(("/", ".")) else "volume")
        if kind == "bind" and not os.path.exists(source):
            problems.append(f"{name}: bind mount source {source} does not exist")

# Health checks and restarts.
for name, svc in services.items():
    if "tools" in (svc.get("profiles") or []):
        continue
    one_shot = svc.get("restart") in (None, "no")
    hc = svc.get("healthcheck") or {}
    disabled = hc.get("disable") or hc.get("test") in (["NONE"], "NONE")
    if not one_shot and (not hc or disabled):
        problems.append(f"{name}: long-running service without a health check")
    if one_shot and svc.get("restart") != "no":
        problems.append(f"{name}: one-shot job should say restart: \"no\"")
    for dep, cond in (svc.get("depends_on") or {}).items():
        condition = cond.get("condition") if isinstance(cond, dict) else None
        dep_hc = services.get(dep, {}).get("healthcheck") or {}
        if condition == "service_healthy" and (not dep_hc or dep_hc.get("disable") or dep_hc.get("test") in (["NONE"], "NONE")):
            problems.append(f"{name}: waits for {dep} to be healthy, but {dep} has no health check")

# The production profile's configuration files, mounted exactly (scripts/stack/production-files.ts).
files_src = open("scripts/stack/production-files.ts").read()
listing = re.search(r"export const PRODUCTION_CONFIG_FILES = \{(.*?)\} as const;", files_src, re.S)
if not listing:
    sys.exit("  cannot find `export const PRODUCTION_CONFIG_FILES = {` in scripts/stack/production-files.ts")
production_files = re.findall(r"^\s+\w+: '(ops/[^']+)',$", listing.group(1), re.M)
shared_dirs = sorted({os.path.dirname(f) for f in production_files})
def text_of(svc):
    parts = []
    for key in ("entrypoint", "command"):
        value = svc.get(key) or []
        parts += [value] if isinstance(value, str) else value
    parts += [str(v) for v in env_of(svc).values() if v is not None]
    test = (svc.get("healthcheck") or {}).get("test") or []
    parts += [test] if isinstance(test, str) else test
    return "\n".join(parts)
mounted = {f: [] for f in production_files}
targets = {}  # container path -> production file mounted there
for name, svc in services.items():
    for vol in svc.get("volumes") or []:
        if isinstance(vol, dict):
            source, target, kind = vol.get("source", ""), vol.get("target", ""), vol.get("type")
        else:
            source, target = vol.split(":")[:2]
            kind = "bind" if source.startswith(("/", ".")) else "volume"
        if kind != "bind":
            continue
        rel = os.path.relpath(os.path.abspath(source))
        if rel in mounted:
            mounted[rel].append((name, target))
            if targets.setdefault(target, rel) != rel:
                problems.append(f"{name}: mounts {rel} at {target}, where another service mounts {targets[target]}")
            # Found by its folder: the Temporal server and UI load <--config dir>/config.yaml (the server its
            # identities.yaml there too), and acls.sh
            # reads admin-client.properties next to itself. Every other file is named by its path.
            by_folder = os.path.basename(rel) in ("config.yaml", "identities.yaml", "admin-client.properties")
            if target not in text_of(svc) and not (by_folder and os.path.dirname(target) in text_of(svc)):
                problems.append(f"{name}: mounts {rel} at {target} but does not name it in its command, environment or health check")
        elif os.path.dirname(rel) in shared_dirs:
            problems.append(f"{name}: mounts {rel}, which is not among the production profile's files (scripts/stack/production-files.ts)")
for name, svc in services.items():
    for vol in svc.get("volumes") or []:
        source, target = (vol.get("source", ""), vol.get("target", "")) if isinstance(vol, dict) else vol.split(":")[:2]
        rel = os.path.relpath(os.path.abspath(source)) if source.startswith(("/", ".")) else source
        if rel in mounted:
            continue
        for f, where in mounted.items():
            if target in {t for _, t in where} or os.path.basename(target) == os.path.basename(f):
                problems.append(f"{name}: mounts {rel} at {target}, in place of {f}")
for f, where in mounted.items():
    if not where:
        problems.append(f"{f}: a production profile file that no service mounts")
notes.append(f"the {len(production_files)} production profile files mounted: " + ", ".join(
    f"{f} ({', '.join(sorted({n for n, _ in where}))})" for f, where in mounted.items()))

# The namespace the app services use exists: temporal-namespace registers it.
ns_job = text_of(services.get("temporal-namespace", {}))
for name, svc in sorted(app_services.items()):
    ns = env_of(svc).get("TEMPORAL_NAMESPACE")
    if ns and f"namespace create --namespace {ns} " not in ns_job:
        problems.append(f"{name}: TEMPORAL_NAMESPACE={ns}, which temporal-namespace does not register")

# Kafka release = the local stack's.
pom = re.search(r"<kafka\.version>\s*([^<\s]+)\s*</kafka\.version>", open("ops/kafka/pom.xml").read()).group(1)
image = services["kafka"]["image"]
if image.rpartition(":")[2] != pom:
    problems.append(f"kafka: image {image}, but ops/kafka/pom.xml pins Kafka {pom}")
notes.append(f"Kafka {pom} in both")
topic = re.search(r"export const TOPIC = '([^']+)'", open("src/domain/names.ts").read()).group(1)
if topic not in text_of(services["kafka-acls"]):
    problems.append(f"kafka-acls: does not grant the topic {topic} of src/domain/names.ts")

# The support file, as written (compose is not asked: it needs the deployment's network): the app image, the
# variables src/config reads, a client that exists, the namespace temporal-namespace registers, no depends_on
# (it starts while Temporal is down), and only volumes of docker-compose.yml.
support_file = sys.argv[2]
main_raw = yaml.safe_load(open("docker-compose.yml"))
support = yaml.safe_load(open(support_file))
for name, svc in sorted((support.get("services") or {}).items()):
    where = f"{support_file}: {name}"
    if svc.get("image") != main_raw["x-app"]["image"]:
        problems.append(f"{where}: image {svc.get('image')}, not the app's {main_raw['x-app']['image']}")
    for var in sorted(env_of(svc)):
        if var not in known_vars:
            problems.append(f"{where}: {var} is not a variable of src/config")
    for arg in (svc.get("entrypoint") or []) + (svc.get("command") or []):
        m = re.fullmatch(r"dist/(.+)\.js", arg)
        if m and not os.path.isfile(f"src/{m.group(1)}.ts"):
            problems.append(f"{where}: runs {arg}, but src/{m.group(1)}.ts does not exist")
    ns = env_of(svc).get("TEMPORAL_NAMESPACE")
    if ns and f"namespace create --namespace {ns} " not in ns_job:
        problems.append(f"{where}: TEMPORAL_NAMESPACE={ns}, which temporal-namespace does not register")
    if svc.get("depends_on"):
        problems.append(f"{where}: depends_on {sorted(svc['depends_on'])}: it must start whatever state they are in")
for key in support.get("volumes") or {}:
    if key not in (main_raw.get("volumes") or {}):
        problems.append(f"{support_file}: volume {key} is not one of docker-compose.yml")
notes.append(f"{support_file}: the app image, variables of src/config, no depends_on")

if problems:
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    sys.exit(f"  {len(problems)} problems")
for note in notes:
    print(f"  {note}")
print("  SUCCESS")
PY

echo "== secrets: each container's own keys, no password on a command line"
npm exec --offline -- tsx scripts/check-compose-secrets.ts "$compose" "$support_compose"
