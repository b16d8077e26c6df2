# The allocators run.sh and uaf.sh compare, for `source`: configs_define
# GUARD_SO sets `configs` (names, glibc first: the anchor of every ratio)
# and `envs` (each one's environment: LD_PRELOAD and the guard's mode).
# Anchors built elsewhere join when their LD_PRELOAD value is given:
# FFMALLOC=/path/libffmallocnpmt.so, MARKUS=/path/libgc.so:/path/libgccpp.so.
# GUARD_BEFORE=/path/guard.so adds "before": deferred mode of another build
# of the guard (an earlier commit's, made with its heapguard/build.sh), so
# that a change is measured against what it changes in the same rounds.
# CONFIGS="glibc deferred ..." keeps only those.

configs_define() {
	local guard=$1 c
	declare -gA envs=(
		[glibc]=""
		[strict]="LD_PRELOAD=$guard SYSCELL_HEAPGUARD=strict"
		[deferred]="LD_PRELOAD=$guard SYSCELL_HEAPGUARD=deferred"
	)
	configs=(glibc strict deferred)
	[[ -z ${FFMALLOC:-} ]] || { envs[ffmalloc]="LD_PRELOAD=$FFMALLOC"; configs+=(ffmalloc); }
	[[ -z ${MARKUS:-} ]] || { envs[markus]="LD_PRELOAD=$MARKUS"; configs+=(markus); }
	[[ -z ${GUARD_BEFORE:-} ]] || { envs[before]="LD_PRELOAD=$GUARD_BEFORE SYSCELL_HEAPGUARD=deferred"; configs+=(before); }
	[[ -n ${CONFIGS:-} ]] || return 0
	read -ra configs <<<"$CONFIGS"
	for c in "${configs[@]}"; do
		[[ -v envs[$c] ]] || { echo "no configuration $c (have: ${!envs[*]})" >&2; exit 2; }
	done
	[[ ${configs[0]} == glibc ]] || { echo "CONFIGS must start with glibc, the anchor of every ratio" >&2; exit 2; }
}
