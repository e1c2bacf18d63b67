#!/usr/bin/env bash
# gen-dev-certs.sh OUTDIR [extra SAN names...]
#
# Makes a development CA and one certificate per xps role with openssl, for
# mutual TLS between the components (README, "TLS"). Not for production:
# the CA key lies beside the certificates.
#
#   OUTDIR/ca.crt, OUTDIR/ca.key        the CA (EC P-256, 10 years)
#   OUTDIR/<role>/ca.crt                the CA bundle again
#   OUTDIR/<role>/tls.crt, tls.key      the role's certificate and key
#
# for the roles scheduler, ams, worker, serve, etcd and admin: a directory
# has the keys of a Kubernetes TLS Secret with its CA (kubectl create
# secret generic xps-ams-tls --from-file=OUTDIR/ams), and the processes
# take it as -tls-ca OUTDIR/ams/ca.crt -tls-cert OUTDIR/ams/tls.crt
# -tls-key OUTDIR/ams/tls.key.
#
# Each certificate names its role in the Subject (OU=role, CN=role: etcd
# takes the CN as the user name), is valid for server and client use (EKU
# serverAuth, clientAuth) for a year, and carries the same names
# (subjectAltName): localhost, 127.0.0.1, ::1, the Helm chart's service
# names (ams, *.ams, etcd, *.etcd, scheduler, serve, worker, *.worker),
# each also as NAME.NAMESPACE.svc and *.NAME.NAMESPACE.svc.cluster.local
# forms, and the extra names given (DNS names or IP addresses). The
# environment sets NAMESPACE (default "default") and NAME_PREFIX (the
# chart's namePrefix, default "").
#
# With WORKERS=N (default 0) it also makes OUTDIR/worker-0 to
# OUTDIR/worker-<N-1>: a certificate of the worker role for each worker
# of its own (OU=worker, CN=worker-<i>), which the shards hold to its own
# pushes and checkpoint (README, "One identity per worker"); etcd needs
# -auth-workers N for them.
#
# An existing CA in OUTDIR is reused (new role certificates, same CA); the
# role certificates are made anew.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
	sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
command -v openssl >/dev/null || { echo "gen-dev-certs.sh: openssl is required (apt-get install openssl)" >&2; exit 1; }

out=$1
shift
ns=${NAMESPACE:-default}
prefix=${NAME_PREFIX:-}
roles=(scheduler ams worker serve etcd admin)
days=365

mkdir -p "$out"
umask 077

# The subjectAltName list shared by every certificate.
san="DNS:localhost,IP:127.0.0.1,IP:::1"
for svc in ams etcd scheduler serve worker; do
	n=$prefix$svc
	san+=",DNS:$n,DNS:*.$n,DNS:$n.$ns,DNS:$n.$ns.svc,DNS:*.$n.$ns.svc,DNS:$n.$ns.svc.cluster.local,DNS:*.$n.$ns.svc.cluster.local"
done
for name in "$@"; do
	if [[ $name =~ ^[0-9.]+$ || $name == *:* ]]; then
		san+=",IP:$name"
	else
		san+=",DNS:$name"
	fi
done

if [ ! -s "$out/ca.crt" ] || [ ! -s "$out/ca.key" ]; then
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 -days 3650 \
		-keyout "$out/ca.key" -out "$out/ca.crt" -subj "/O=xps/OU=dev/CN=xps development CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi

ext=$(mktemp)
trap 'rm -f "$ext"' EXIT
cat >"$ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san
EXT

workers=${WORKERS:-0}
[[ $workers =~ ^[0-9]+$ ]] || { echo "gen-dev-certs.sh: WORKERS must be a number, not $workers" >&2; exit 2; }
names=("${roles[@]}")
for ((i = 0; i < workers; i++)); do names+=("worker-$i"); done

for name in "${names[@]}"; do
	role=$name
	[[ $name == worker-* ]] && role=worker
	d=$out/$name
	mkdir -p "$d"
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 \
		-keyout "$d/tls.key" -out "$d/tls.csr" -subj "/O=xps/OU=$role/CN=$name" 2>/dev/null
	openssl x509 -req -in "$d/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
		-days "$days" -sha256 -extfile "$ext" -out "$d/tls.crt" 2>/dev/null
	rm -f "$d/tls.csr"
	cp "$out/ca.crt" "$d/ca.crt"
	chmod 0755 "$d"
	chmod 0644 "$d/ca.crt" "$d/tls.crt"
	chmod 0600 "$d/tls.key"
done
chmod 0644 "$out/ca.crt"
rm -f "$out/ca.srl"
echo "gen-dev-certs.sh: CA $out/ca.crt; certificates for ${names[*]} under $out/<name>/ (valid for: $san)"
