#!/usr/bin/env bash
# Installs the Debian packages that syscell's tests, benchmarks and demo
# need, when any is missing. Quiet when all are present; runs apt-get update
# only when something is to be installed.
set -euo pipefail

packages=(
	clang llvm libbpf-dev bpftool # eBPF programs
	libseccomp-dev python3-seccomp # libseccomp, the baseline compiler
	strace runc crun podman        # tracing and container runtimes (podman: integration/'s runtime tests)
	gcc libc6-dev make             # C; libc6-dev: static libc (integration/'s probe, syscell-shim)
	redis-server redis-tools nginx wrk postgresql postgresql-contrib fio # integration/'s servers
	binutils python3 perl git openssl curl sqlite3 jq gawk xz-utils bzip2 # integration/'s compatibility suite and infer's Debian programs (binutils: as)
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
