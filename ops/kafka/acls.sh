#!/usr/bin/env bash
# The job's ACLs on a broker that runs the KRaft StandardAuthorizer with allow.everyone.if.no.acl.found=false
# (ops/kafka/production.properties), so that the relay's principal may create, describe and write the job's
# topic and nothing else:
#   ops/kafka/acls.sh <bootstrap-server> <topic> [relay-user]
# The admin's client settings are ops/kafka/admin-client.properties (next to this script), with
# BROKER_TLS_DIR and BROKER_ADMIN_PASSWORD in the environment. Runs the broker's own ACL tool:
# kafka-acls.sh from PATH (the Kafka image), or the command in $KAFKA_ACLS. Adding an ACL that exists is a
# no-op, so running it again is harmless.
# No cluster permission: since Kafka 2.8 (KIP-679) WRITE on a topic is enough for an idempotent producer
# to get its producer id, and the relay never uses transactions.
set -euo pipefail

bootstrap="${1:?usage: acls.sh <bootstrap-server> <topic> [relay-user]}"
topic="${2:?usage: acls.sh <bootstrap-server> <topic> [relay-user]}"
user="${3:-relay}"
config="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/admin-client.properties"
acls="${KAFKA_ACLS:-kafka-acls.sh}"

"$acls" --bootstrap-server "$bootstrap" --command-config "$config" --add \
  --allow-principal "User:$user" --operation Create --operation Describe --operation Write \
  --topic "$topic" --resource-pattern-type literal
