package cell

import (
	"strconv"
	"strings"
)

// Environment variables of the program.
const (
	// channelEnv names the inherited socket to the launcher (CHANNEL_ENV
	// in audit/audit.h), and socketEnv the path of a supervisor's socket
	// to connect to instead (SOCKET_ENV); the library removes them.
	channelEnv = "SYSCELL_CELL_FD"
	socketEnv  = "SYSCELL_CELL_SOCKET"
	// channelFd is the socket's descriptor in the program: the first
	// after the standard streams.
	channelFd = 3
	// inheritEnv is the room the first image of the program fills with
	// what later images inherit (INHERIT_ENV in audit/audit.h).
	inheritEnv  = "SYSCELL_CELL"
	tunablesEnv = "GLIBC_TUNABLES"
	// staticTLS is the surplus of static TLS the loader reserves for
	// objects loaded later. The audit library's initial-exec TLS (its
	// gates' entries) takes some of glibc's default, and programs that
	// load objects with initial-exec TLS (redis-server did) then fail
	// with "cannot allocate memory in static TLS block".
	staticTLSTunable = "glibc.rtld.optional_static_tls"
	staticTLS        = 4096
)

// programEnv is env with what the audit library needs, set for the
// program only: syscell itself runs without it. channel is the variable
// that tells the library how to reach its launcher (NAME=VALUE; none
// when empty), and inherit the room to reserve for what executed images
// inherit.
func programEnv(env []string, library, channel string, inherit int) []string {
	var out []string
	tunables := ""
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "LD_AUDIT", channelEnv, socketEnv, inheritEnv:
		case tunablesEnv:
			tunables = value
		default:
			out = append(out, kv)
		}
	}
	out = append(out, "LD_AUDIT="+library)
	if channel != "" {
		out = append(out, channel)
	}
	return append(out,
		inheritEnv+"="+strings.Repeat(" ", inherit),
		tunablesEnv+"="+withStaticTLS(tunables))
}

// inheritedChannel is the channel variable of a program syscell starts
// itself: the socket it inherits.
var inheritedChannel = channelEnv + "=" + strconv.Itoa(channelFd)

// withStaticTLS sets the static TLS surplus in a GLIBC_TUNABLES value,
// keeping a larger one the user set.
func withStaticTLS(tunables string) string {
	var kept []string
	size := staticTLS
	for _, t := range strings.Split(tunables, ":") {
		name, value, _ := strings.Cut(t, "=")
		if name == staticTLSTunable {
			if n, err := strconv.Atoi(value); err == nil && n > size {
				size = n
			}
			continue
		}
		if t != "" {
			kept = append(kept, t)
		}
	}
	return strings.Join(append(kept, staticTLSTunable+"="+strconv.Itoa(size)), ":")
}
