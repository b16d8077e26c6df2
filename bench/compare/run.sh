#!/usr/bin/env bash
# Compile one resolved OCI seccomp policy with the baselines syscell is
# measured against, and write their programs as raw BPF:
#
#   run.sh POLICY.json OUTDIR [MULTIARCH_POLICY.json]
#
# OUTDIR gets libseccomp-linear.bpf, libseccomp-tree.bpf, gvisor.bpf (names
# resolved with gVisor's own table, as runsc does), gvisor-libseccomp-syscalls.bpf
# (gVisor compiling exactly the x86_64 syscalls libseccomp resolved: the
# like-for-like compiler comparison), libseccomp-linear-multiarch.bpf when a
# multi-arch policy is given, and summary.txt / summary.json. Safe to rerun.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
	echo "usage: $0 POLICY.json OUTDIR [MULTIARCH_POLICY.json]" >&2
	exit 2
fi
policy=$(realpath "$1")
multiarch=${3:+$(realpath "$3")}
mkdir -p "$2"
out=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
# Debian's binding is built for the system interpreter, not a pyenv one.
py=/usr/bin/python3

# python3-seccomp brings libseccomp2, whose .so libseccomp.py also opens.
if ! "$py" -c 'import seccomp' 2>/dev/null; then
	apt-get update
	apt-get install -y python3-seccomp
fi

# gVisor is built in its own module; go fetches it through the module proxy.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here/gvisor" && go build -o "$bin/gvisor" .)

# compile NAME CMD...: run one compiler, keep its report and skipped names.
compile() {
	local name=$1
	shift
	"$@" 2>"$bin/$name.err" >"$bin/$name.out" || {
		cat "$bin/$name.err" >&2
		return 1
	}
	printf '%-32s %s\n' "$name.bpf" "$(cat "$bin/$name.out")" | tee -a "$bin/summary.txt"
	sed "s/^/    /" "$bin/$name.err" >>"$bin/summary.txt"
}

compile libseccomp-linear "$py" "$here/libseccomp.py" --optimize 1 \
	--numbers-out "$bin/numbers.json" "$policy" "$out/libseccomp-linear.bpf"
compile libseccomp-tree "$py" "$here/libseccomp.py" --optimize 2 \
	"$policy" "$out/libseccomp-tree.bpf"
compile gvisor "$bin/gvisor" "$policy" "$out/gvisor.bpf"
compile gvisor-libseccomp-syscalls "$bin/gvisor" --numbers "$bin/numbers.json" \
	"$policy" "$out/gvisor-libseccomp-syscalls.bpf"
if [[ -n $multiarch ]]; then
	compile libseccomp-linear-multiarch "$py" "$here/libseccomp.py" --optimize 1 \
		"$multiarch" "$out/libseccomp-linear-multiarch.bpf"
fi
mv "$bin/summary.txt" "$out/summary.txt"

# summary.json: instructions from the file size (8-byte sock_filter), build
# time from each compiler's report.
"$py" - "$out" <<'EOF'
import json, os, re, sys
out = sys.argv[1]
summary = {}
for line in open(os.path.join(out, "summary.txt")):
    m = re.match(r"(\S+\.bpf)\s+\d+ instructions, build (\d+) us", line)
    if m:
        summary[m[1]] = {
            "instructions": os.path.getsize(os.path.join(out, m[1])) // 8,
            "build_us": int(m[2]),
        }
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
EOF
