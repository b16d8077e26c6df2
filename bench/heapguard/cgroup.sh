# Memory cgroups for run.sh: a fresh group per run, so that its peak charge
# is that run's peak memory. cgroup v2 (memory.peak) or v1
# (memory.max_usage_in_bytes); without a writable one every function is a
# no-op and peaks are n/a.

cgroup_parent() {
	local line
	if line=$(grep -m1 '^0::' /proc/self/cgroup) && [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
		echo "/sys/fs/cgroup${line#0::}"
	elif line=$(grep -m1 ':memory:' /proc/self/cgroup); then
		echo "/sys/fs/cgroup/memory${line#*:memory:}"
	fi
}

cgroup_new() {
	local parent dir
	parent=$(cgroup_parent) || return 1
	dir="$parent/heapguard-bench-$$-$RANDOM"
	mkdir "$dir" 2>/dev/null || return 1
	echo "$dir"
}

# cgroup_run DIR [OUTSIDE... --] CMD...: runs CMD inside DIR (or plainly if
# DIR is empty), under OUTSIDE if given, a command that stays outside DIR
# (a CPU-time counter, whose memory is not the run's).
cgroup_run() {
	local dir=$1 outside=() a
	shift
	for a; do
		[[ $a != -- ]] || break
		outside+=("$a")
	done
	if [[ ${a:-} == -- ]]; then
		shift $((${#outside[@]} + 1))
	else
		outside=()
	fi
	if [[ -n $dir ]]; then
		"${outside[@]}" bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"
	else
		"${outside[@]}" "$@"
	fi
}

cgroup_peak_kb() {
	local f
	for f in "$1/memory.peak" "$1/memory.max_usage_in_bytes"; do
		if [[ -n $1 && -r $f ]]; then
			echo $(($(cat "$f") / 1024))
			return
		fi
	done
	echo n/a
}

cgroup_remove() {
	[[ -n $1 ]] && rmdir "$1" 2>/dev/null || true
}
