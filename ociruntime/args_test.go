package ociruntime

import (
	"maps"
	"slices"
	"testing"
)

func TestParseInvocation(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		globals []string
		own     map[string]string
		command string
		rest    []string
	}{
		{[]string{"state", "c1"}, nil, map[string]string{}, "state", []string{"c1"}},
		// podman's and containerd's global flags, and syscell's own in
		// both forms, which the delegate never sees.
		{[]string{"--root", "/run/runc", "--log=/l.json", "--log-format", "json", "--systemd-cgroup", "--syscell-dir=/d", "--syscell-delegate", "crun", "create", "--bundle", "/b", "c1"},
			[]string{"--root", "/run/runc", "--log=/l.json", "--log-format", "json", "--systemd-cgroup"},
			map[string]string{"syscell-dir": "/d", "syscell-delegate": "crun"}, "create", []string{"--bundle", "/b", "c1"}},
		{[]string{"--debug", "--cgroup-manager", "cgroupfs", "features"}, []string{"--debug", "--cgroup-manager", "cgroupfs"}, map[string]string{}, "features", []string{}},
		{[]string{"--version"}, []string{"--version"}, map[string]string{}, "", nil},
	} {
		inv, err := parseInvocation(tc.args)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if !slices.Equal(inv.globals, tc.globals) || !maps.Equal(inv.own, tc.own) || inv.command != tc.command || !slices.Equal(inv.args, tc.rest) {
			t.Errorf("%q: globals %q own %v command %q args %q; want %q %v %q %q", tc.args, inv.globals, inv.own, inv.command, inv.args, tc.globals, tc.own, tc.command, tc.rest)
		}
	}
	if _, err := parseInvocation([]string{"--root"}); err == nil {
		t.Error("--root without its value")
	}
	inv, _ := parseInvocation([]string{"--root", "/r", "--log-format=json", "delete", "c1"})
	if inv.global("root") != "/r" || inv.global("log-format") != "json" || inv.global("log") != "" {
		t.Errorf("global: root %q log-format %q log %q", inv.global("root"), inv.global("log-format"), inv.global("log"))
	}
}

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		valued commandFlags
		flags  map[string]string
		pos    []string
	}{
		{[]string{"--bundle", "/b", "--pid-file=/p", "--no-pivot", "c1"}, createFlags, map[string]string{"bundle": "/b", "pid-file": "/p", "no-pivot": ""}, []string{"c1"}},
		{[]string{"-b", "/b", "c1"}, createFlags, map[string]string{"b": "/b"}, []string{"c1"}},
		// exec: the container, then the command and its own flags.
		{[]string{"--env", "A=1", "-t", "c1", "sh", "-c", "ls -l"}, execFlags, map[string]string{"env": "A=1", "t": ""}, []string{"c1", "sh", "-c", "ls -l"}},
		{[]string{"--process", "/p.json", "--detach", "c1"}, execFlags, map[string]string{"process": "/p.json", "detach": ""}, []string{"c1"}},
		{[]string{"--force", "--", "-odd-id"}, plainFlags, map[string]string{"force": ""}, []string{"-odd-id"}},
	} {
		cl, err := parseCommand(tc.args, tc.valued)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if !maps.Equal(cl.flags, tc.flags) || !slices.Equal(cl.positional, tc.pos) {
			t.Errorf("%q: flags %v positional %q; want %v %q", tc.args, cl.flags, cl.positional, tc.flags, tc.pos)
		}
	}
	if _, err := parseCommand([]string{"--bundle"}, createFlags); err == nil {
		t.Error("--bundle without its value")
	}
	cl, _ := parseCommand(nil, plainFlags)
	if _, err := cl.id(); err == nil {
		t.Error("no container id, no error")
	}
}
