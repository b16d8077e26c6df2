#!/usr/bin/env bash
# One recorded run of Debian's fio, as addrfilter's evaluation ran fio
# beside its servers. fio is not a server: the command is its own load and
# exits by itself (lib.sh waits for it instead of sending SIGTERM). The
# job: mixed random reads and writes (50/50) of 4 KiB blocks with
# pread/pwrite (ioengine=psync, buffered), two processes (numjobs=2, fio's
# default of forked processes, as a multi-process server) on a 256 MiB file
# each in $WORK, for FIO_SECONDS (default 10) after the files are laid
# out, one group report in JSON on the standard output (the load's output,
# from which throughput.sh reads the IOPS).
#
#   bench/servers/fio.sh record OUT.toml [syscell record flags, e.g. --merge FILE]
#
# or sourced by throughput.sh (lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(fio)
# fio serves no clients: in phases, its jobs' processes serve from their
# first write of the timed part (the layout writes with write, and the
# loader reads every library with pread64, so pread64 would start
# serving before main), and the main process from its first wait for
# the jobs it started.
SERVING_FROM=pwrite64,wait4
FIO_SECONDS=${FIO_SECONDS:-10}

server_prepare() {
	mkdir -p "$WORK/fio"
	# The default seed (randrepeat) makes every run read and write the
	# same offsets; laying out 512 MiB takes a second or two, before the
	# timed part.
	SERVER_CMD=(fio --name=randrw --directory="$WORK/fio" --ioengine=psync --rw=randrw
		--bs=4k --size=256m --numjobs=2 --time_based --runtime="${FIO_SECONDS}s"
		--group_reporting --output-format=json)
	# The layout and start-up on top of the timed part, with room to spare.
	RUN_TIMEOUT=$((FIO_SECONDS + 120))
}

server_quick() { FIO_SECONDS=2; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	server_main "$@"
fi
