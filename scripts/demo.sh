#!/usr/bin/env bash
# The demo. First the bundled program with two libraries (examples/demo):
# recorded, enforced (a library's forbidden mkdir fails and leaves no
# directory) and scored. Then Docker's default seccomp profile through
# syscell's compiler: compiled, a few syscalls decided with the program, and
# the program measured next to libseccomp's for the same profile.
#
#   scripts/demo.sh [SYSCELL]    (make demo builds bin/syscell and runs this)
set -euo pipefail
cd "$(dirname "$0")/.."

syscell=${1:-bin/syscell}
# Docker's profile (moby/moby profiles/seccomp/default.json, Apache-2.0;
# see policy/testdata/README.md).
profile=policy/testdata/docker-default.json
out=bin/demo
mkdir -p "$out"

# show CMD...: print a command, then run it.
show() {
	echo
	echo "\$ $*"
	"$@"
}

echo "== The bundled demo: a program with two libraries, libgetpid.so (needs"
echo "   getpid) and libmk.so (needs no syscall of its own)."
examples/demo/build.sh "$out/prog"
show "$syscell" record -q -o "$out/demo.toml" -- "$out/prog/demo"
echo
echo "\$ grep -A3 '^\[\[compartment' $out/demo.toml"
grep -A3 '^\[\[compartment' "$out/demo.toml"
echo "(libmk.so made no syscall, so it has no compartment: it may make none)"
show "$syscell" run --policy "$out/demo.toml" -- "$out/prog/demo"
rm -rf "$out/x"
echo
echo "== libmk.so, compromised, tries to create a directory:"
show "$syscell" run --policy "$out/demo.toml" -- "$out/prog/demo" attack "$out/x" || true
if [ -e "$out/x" ]; then
	echo "FAIL: $out/x was created" >&2
	exit 1
fi
echo "(no $out/x: the mkdir never ran)"
show "$syscell" score "$out/demo.toml"

echo
echo "== Compile Docker's default profile, for the container of 'docker run'"
echo "   (Docker's 14 default capabilities, this machine's kernel)."
show "$syscell" compile "$profile" --stats -o "$out/docker.bpf"
show "$syscell" convert "$profile" --to toml -o "$out/docker.toml"
echo "(the profile, resolved, in syscell's TOML: $out/docker.toml)"
"$syscell" disasm "$out/docker.bpf" >"$out/docker.asm"
echo
echo "\$ $syscell disasm $out/docker.bpf | head -n 16"
head -n 16 "$out/docker.asm"
echo "(all of it: $out/docker.asm)"

echo
echo "== Decide syscalls with the program; eval checks each verdict against the policy."
show "$syscell" eval "$out/docker.toml" --syscall read
show "$syscell" eval "$out/docker.toml" --syscall mount
show "$syscell" eval "$out/docker.toml" --syscall socket --arg 0=40
show "$syscell" eval "$out/docker.toml" --syscall socket --arg 0=2
show "$syscell" eval "$out/docker.toml" --syscall clone3
show "$syscell" eval "$out/docker.toml" --arch x86 --syscall socketcall

echo
echo "== Measure: syscell's program and libseccomp's (binary tree), x86_64 only."
"$syscell" convert "$out/docker.toml" --to oci --arch x86_64 -o "$out/docker-x86_64.json"
"$syscell" compile "$out/docker-x86_64.json" -o "$out/syscell-x86_64.bpf"
# Debian's binding is built for the system interpreter.
/usr/bin/python3 bench/compare/libseccomp.py --optimize 2 --reps 1 \
	"$out/docker-x86_64.json" "$out/libseccomp-x86_64.bpf"
show "$syscell" measure "$out/syscell-x86_64.bpf" --policy "$out/docker-x86_64.json"
show "$syscell" measure "$out/libseccomp-x86_64.bpf" --policy "$out/docker-x86_64.json"
echo
echo "(libseccomp $(dpkg-query -W -f='${Version}' libseccomp2) does not know the"
echo " syscalls it mismatches on, so it leaves them to the default action.)"
