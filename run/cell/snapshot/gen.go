package snapshot

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux snapshot snapshot.c -- -I/usr/include/x86_64-linux-gnu -mcpu=v3 -Wall -Werror
