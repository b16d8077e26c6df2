package trace

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -type event_header -type syscall_event -type map_event -type unmap_event -type fork_event -type exec_event -type exit_event -type count_event -type node_key -type node -type count_key -type event_type -type map_kind -type node_kind -type lost_reason -type scratch_user -type phase recorder recorder.c -- -I/usr/include/x86_64-linux-gnu -Wall -Werror
