#!/usr/bin/env python3
"""Who may hold which secret in docker-compose.yml; run by scripts/check-compose.sh, or alone:

    python3 scripts/check-compose-secrets.py [docker-compose.yml]

1. Each container mounts its own keys only. The `certs` job issues every certificate into its own volume
   `certs` (with the CA's key) and copies, per volume `certs-<name>`, ca.pem and the files its
   `issue <name> <owner> <file>...` line names. A container sees the files of the volumes it mounts; they
   must be exactly its row of KEY_FILES below. Only `certs` may mount `certs`.
2. No password on a command line. A service's command, entrypoint or health check must not hold a password
   compose interpolates, nor expand a variable holding one (its name says PASSWORD, or its value
   interpolates one) except in `printf` (a shell builtin: no process, nothing in `ps`) writing it to a
   file, or in `unset`.

Reads the file as written (YAML merge keys resolved), so it needs no Docker and no docker-compose.
"""
import re
import sys

import yaml

# The files of ops/tls/make-certs.sh each container may see: its own certificate and key, and the CA
# certificate to check its peers by. Containers not listed may see none.
KEY_FILES = {
    "certs": "everything: it issues them",
    "postgres": {"ca.pem", "postgres.pem", "postgres-key.pem"},
    "temporal-postgres": {"ca.pem", "temporal-postgres.pem", "temporal-postgres-key.pem"},
    "temporal-db-role": {"ca.pem"},
    "temporal-schema": {"ca.pem"},
    "temporal": {"ca.pem", "temporal.pem", "temporal-key.pem"},
    "temporal-namespace": {"ca.pem", "cli.pem", "cli-key.pem"},
    "temporal-ui": {"ca.pem", "ui-client.pem", "ui-client-key.pem"},
    "kafka": {"ca.pem", "kafka-keystore.pem"},
    "kafka-acls": {"ca.pem"},
    "migrate": {"ca.pem"},
    "worker": {"ca.pem", "worker.pem", "worker-key.pem"},
    "relay": {"ca.pem"},
    "schedule-apply": {"ca.pem", "client.pem", "client-key.pem"},
    "client": {"ca.pem", "client.pem", "client-key.pem"},
}
ISSUER, ISSUER_VOLUME = "certs", "certs"


def volumes_of(svc):
    """(source, target, kind) of each mount, short or long syntax."""
    for vol in svc.get("volumes") or []:
        if isinstance(vol, dict):
            yield vol.get("source", ""), vol.get("target", ""), vol.get("type", "volume")
        else:
            source, target = vol.split(":")[:2]
            yield source, target, "bind" if source.startswith(("/", ".")) else "volume"


def text_of(svc):
    """The service's command, entrypoint and health check as shell text, one logical line per line."""
    parts = []
    for key in ("entrypoint", "command"):
        value = svc.get(key) or []
        parts += [value] if isinstance(value, str) else [str(v) for v in value]
    test = (svc.get("healthcheck") or {}).get("test") or []
    parts += [test] if isinstance(test, str) else [str(t) for t in test]
    return "\n".join(parts).replace("\\\n", " ")


def env_of(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def problems_of(compose):
    services = compose.get("services") or {}
    problems = []

    # 1. Keys per container.
    issuer = services.get(ISSUER)
    if issuer is None:
        return [f"no service {ISSUER!r} issues the certificates"]
    issued_at = {target: source for source, target, kind in volumes_of(issuer) if kind == "volume"}
    contents = {}
    for m in re.finditer(r"^\s*issue (\S+) \S+((?: \S+)*)\s*$", text_of(issuer), re.M):
        volume = issued_at.get(f"/issued/{m.group(1)}")
        if volume is None:
            problems.append(f"{ISSUER}: issues into /issued/{m.group(1)}, where no volume is mounted")
            continue
        contents[volume] = {"ca.pem", *m.group(2).split()}
    for target, volume in issued_at.items():
        if target.startswith("/issued/") and volume not in contents:
            problems.append(f"{ISSUER}: mounts {volume} at {target} but issues nothing into it")
    for name, svc in services.items():
        if name == ISSUER:
            continue
        sees = set()
        for source, target, kind in volumes_of(svc):
            if kind != "volume":
                continue
            if source == ISSUER_VOLUME:
                problems.append(f"{name}: mounts {ISSUER_VOLUME} (every key and the CA's) at {target}; only {ISSUER} may")
            elif source in contents:
                sees |= contents[source]
            elif source.startswith("certs"):
                problems.append(f"{name}: mounts {source}, which {ISSUER} does not fill")
        allowed = KEY_FILES.get(name, set())
        extra, missing = sorted(sees - allowed), sorted(allowed - sees)
        if extra:
            problems.append(f"{name}: sees {', '.join(extra)}, which are not its own (KEY_FILES allows {', '.join(sorted(allowed)) or 'none'})")
        if missing:
            problems.append(f"{name}: lacks {', '.join(missing)}, its own (KEY_FILES)")
    for name in KEY_FILES:
        if name not in services:
            problems.append(f"KEY_FILES names {name}, which is no service")

    # 2. Passwords on command lines.
    for name, svc in services.items():
        secret_vars = {
            var for var, value in env_of(svc).items() if "PASSWORD" in var or re.search(r"\$\{[A-Z_]*PASSWORD", value)
        }
        for line in text_of(svc).split("\n"):
            words = line.split()
            if re.search(r"\$\{[A-Z_]*PASSWORD", line):
                problems.append(f"{name}: its command line holds a password compose interpolates: {line.strip()}")
                continue
            used = {v for v in re.findall(r"\$\$\{?([A-Za-z_][A-Za-z0-9_]*)", line) if v in secret_vars or "PASSWORD" in v}
            if used and (not words or words[0] not in ("printf", "unset")):
                problems.append(
                    f"{name}: passes {', '.join(sorted(used))} as an argument, visible to anyone in ps: {line.strip()}"
                )
    return problems


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "docker-compose.yml"
    with open(path) as f:
        compose = yaml.safe_load(f)
    problems = problems_of(compose)
    if problems:
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        sys.exit(f"  {len(problems)} problems with secrets in {path}")
    print(f"  SUCCESS: each container mounts its own keys only ({len(KEY_FILES)} in the table), no password on a command line")


if __name__ == "__main__":
    main()
