#!/usr/bin/env bash
# The stack's certificates: one CA, a server certificate per service, a client certificate per caller.
#   ops/tls/make-certs.sh <dir> [extra-dns-name ...]
# Writes into <dir> (created 0700): ca.pem/ca-key.pem, <name>.pem/<name>-key.pem for the servers
# (postgres, temporal, kafka, ui) and the clients (worker, relay, client, cli, ui-client, support). Server
# certificates name localhost, 127.0.0.1 and their compose service name, plus any extra names given.
# Idempotent: an existing ca.pem is kept, and so is every certificate already there, so a stack that
# restarts keeps trusting what it issued. The openssl CLI (not an npm library) because the compose file
# runs this same script in a stock image, where openssl is present and node_modules is not.
# Keys are PKCS#8 RSA 2048: PostgreSQL, Go (Temporal), Java's PEM key store (Kafka) and Node read it.
set -euo pipefail

if ! command -v openssl >/dev/null 2>&1; then
  echo "error: openssl is not on PATH; install it (Debian/Ubuntu: sudo apt-get install openssl)" >&2
  exit 1
fi

dir="${1:?usage: make-certs.sh <dir> [extra-dns-name ...]}"
shift
extra=("$@")
days=825
umask 077
mkdir -p "$dir"
cd "$dir"

if [[ ! -s ca.pem ]]; then
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ca-key.pem 2>/dev/null
  openssl req -x509 -new -key ca-key.pem -sha256 -days "$days" -subj "/CN=expiry-reminder stack CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.pem
fi

# issue <name> <server|client> <service-dns-name>
issue() {
  local name="$1" kind="$2" service="$3"
  [[ -s "$name.pem" && -s "$name-key.pem" ]] && return 0
  local san="DNS:localhost,IP:127.0.0.1"
  [[ -n "$service" ]] && san="DNS:$service,$san"
  for e in "${extra[@]}"; do san="$san,DNS:$e"; done
  local usage="serverAuth,clientAuth"
  [[ "$kind" == client ]] && usage="clientAuth"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$name-key.pem" 2>/dev/null
  openssl req -new -key "$name-key.pem" -subj "/CN=$name" -out "$name.csr"
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -sha256 -days "$days" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=%s\nkeyUsage=critical,digitalSignature,keyEncipherment\n' "$san" "$usage") \
    -out "$name.pem" 2>/dev/null
  rm -f "$name.csr"
}

# Servers (serverAuth and clientAuth: Temporal's services also dial each other with theirs).
issue postgres server postgres
issue temporal-postgres server temporal-postgres
issue temporal server temporal
issue kafka server kafka
issue ui server temporal-ui
# Callers of the Temporal frontend (mTLS) and of PostgreSQL/Kafka where they present one.
issue worker client ""
issue relay client ""
issue client client ""
issue cli client ""
issue ui-client client ""
issue support client ""
# Kafka's PEM key store (ssl.keystore.location) reads the key and its certificate from one file.
cat kafka-key.pem kafka.pem >kafka-keystore.pem
rm -f ca.srl
echo "certificates in $dir" >&2
