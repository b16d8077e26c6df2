package kcount

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux kcount kcount.c -- -I/usr/include/x86_64-linux-gnu -Wall -Werror
