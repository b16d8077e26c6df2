// Package hostservers runs Debian's redis-server and nginx as bench/servers
// does (the same settings and loads, redis-benchmark and wrk), for a
// server that runs in a container of the host's /usr and /etc with a
// writable /tmp on the host's network: syscell's container tests and
// benchmarks.
package hostservers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Server is a server and its load.
type Server struct {
	Name string
	// Tools are the programs the server and its load need on the host.
	Tools []string
	// Command writes what the server needs to tmp (the container's
	// /tmp) and returns its command line in the container, listening on
	// 127.0.0.1:port.
	Command func(tmp string, port int) ([]string, error)
	// Ready says whether the server answers.
	Ready func(port int) bool
	// Load runs the load against the server: a short one if quick.
	Load func(ctx context.Context, port int, quick bool) (Figures, error)
}

// Figures are what a load measured.
type Figures struct {
	// Throughput is in operations (requests) per second: for
	// redis-benchmark's suite, the harmonic mean of its tests', as
	// bench/servers/throughput.sh computes it.
	Throughput float64
	Output     string
}

// All are the servers, by name.
var All = []Server{Redis, Nginx}

// Redis is redis-server without persistence, loaded by redis-benchmark's
// default suite with 48 clients (bench/servers/redis.sh).
var Redis = Server{
	Name:  "redis",
	Tools: []string{"redis-server", "redis-benchmark"},
	Command: func(tmp string, port int) ([]string, error) {
		return []string{"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", "/tmp", "--daemonize", "no"}, nil
	},
	Ready: func(port int) bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return false
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Second))
		fmt.Fprint(conn, "PING\r\n")
		line, _ := bufio.NewReader(conn).ReadString('\n')
		return line == "+PONG\r\n"
	},
	Load: func(ctx context.Context, port int, quick bool) (Figures, error) {
		requests := "20000"
		if quick {
			requests = "2000"
		}
		out, err := run(ctx, "redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-c", "48", "-n", requests, "--csv")
		if err != nil {
			return Figures{Output: out}, err
		}
		var inverse float64
		n := 0
		for _, m := range regexp.MustCompile(`(?m)^"([^"]*)","([\d.]+)"`).FindAllStringSubmatch(out, -1) {
			rps, _ := strconv.ParseFloat(m[2], 64)
			if m[1] == "test" || rps <= 0 {
				continue
			}
			inverse += 1 / rps
			n++
		}
		if n == 0 {
			return Figures{Output: out}, errors.New("no test results in redis-benchmark's output")
		}
		return Figures{Throughput: float64(n) / inverse, Output: out}, nil
	},
}

// Nginx is nginx's master and two workers (as www-data) serving a small
// page, loaded by wrk on two threads (bench/servers/nginx.sh; 50
// connections rather than 200, for a load its container's host shares).
var Nginx = Server{
	Name:  "nginx",
	Tools: []string{"nginx", "wrk"},
	Command: func(tmp string, port int) ([]string, error) {
		if err := os.MkdirAll(filepath.Join(tmp, "www"), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, "www", "index.html"), []byte("<p>syscell</p>\n"), 0o644); err != nil {
			return nil, err
		}
		conf := fmt.Sprintf(`user www-data;
worker_processes 2;
pid /tmp/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
	include /etc/nginx/mime.types;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 65;
	access_log off;
	client_body_temp_path /tmp/client_body;
	proxy_temp_path /tmp/proxy;
	fastcgi_temp_path /tmp/fastcgi;
	uwsgi_temp_path /tmp/uwsgi;
	scgi_temp_path /tmp/scgi;
	server {
		listen 127.0.0.1:%d;
		root /tmp/www;
	}
}
`, port)
		if err := os.WriteFile(filepath.Join(tmp, "nginx.conf"), []byte(conf), 0o644); err != nil {
			return nil, err
		}
		// The workers, as www-data, read the page.
		if err := os.Chmod(tmp, 0o755); err != nil {
			return nil, err
		}
		return []string{"nginx", "-p", "/tmp", "-e", "stderr", "-c", "/tmp/nginx.conf", "-g", "daemon off; master_process on;"}, nil
	},
	Ready: func(port int) bool {
		client := http.Client{Timeout: time.Second}
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	},
	Load: func(ctx context.Context, port int, quick bool) (Figures, error) {
		seconds := "10s"
		if quick {
			seconds = "2s"
		}
		out, err := run(ctx, "wrk", "-t", "2", "-c", "50", "-d", seconds, fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			return Figures{Output: out}, err
		}
		m := regexp.MustCompile(`Requests/sec:\s+([\d.]+)`).FindStringSubmatch(out)
		if m == nil || strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors: connect") {
			return Figures{Output: out}, fmt.Errorf("wrk did not get its pages:\n%s", out)
		}
		rate, _ := strconv.ParseFloat(m[1], 64)
		return Figures{Throughput: rate, Output: out}, nil
	},
}

// run runs a load tool and returns its standard output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", name, err, stderr.String())
	}
	return string(out), nil
}

// FreePort is a TCP port of 127.0.0.1 no socket uses now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
