package integration

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
)

// containerServer is a server of bench/servers, run in a container of
// the host's /usr and /etc (read-only) with a writable /tmp, on the
// host's network, with a load the test runs from the host.
type containerServer struct {
	name string
	// tools are the programs the load needs on the host.
	tools []string
	// setUp writes what the server needs to tmp (the container's /tmp)
	// and returns its command line in the container.
	setUp func(t *testing.T, tmp string, port int) []string
	ready func(port int) bool
	load  func(t *testing.T, port int)
}

var containerServers = []containerServer{
	{
		name:  "redis",
		tools: []string{"redis-benchmark"},
		setUp: func(t *testing.T, tmp string, port int) []string {
			return []string{"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", "/tmp", "--daemonize", "no"}
		},
		ready: func(port int) bool {
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
		load: func(t *testing.T, port int) {
			// The -c 48 of bench/servers/redis.sh, with its quick requests.
			out := string(execute(t, runTimeout, exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-c", "48", "-n", "2000", "--csv")))
			if !strings.Contains(out, `"SET"`) {
				t.Errorf("redis-benchmark did not finish its tests:\n%s", out)
			}
		},
	},
	{
		name:  "nginx",
		tools: []string{"wrk"},
		setUp: func(t *testing.T, tmp string, port int) []string {
			if err := os.MkdirAll(filepath.Join(tmp, "www"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, "www", "index.html"), []byte("<p>syscell</p>\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// As bench/servers/nginx.sh configures it, in /tmp.
			conf := fmt.Sprintf(`user www-data;
worker_processes 2;
pid /tmp/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
	include /etc/nginx/mime.types;
	sendfile on;
	tcp_nopush on;
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
				t.Fatal(err)
			}
			return []string{"nginx", "-p", "/tmp", "-e", "stderr", "-c", "/tmp/nginx.conf", "-g", "daemon off; master_process on;"}
		},
		ready: func(port int) bool {
			client := http.Client{Timeout: time.Second}
			resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		},
		load: func(t *testing.T, port int) {
			out := string(execute(t, runTimeout, exec.Command("wrk", "-t", "2", "-c", "50", "-d", "2s", fmt.Sprintf("http://127.0.0.1:%d/index.html", port))))
			if !strings.Contains(out, "Requests/sec") || strings.Contains(out, "Non-2xx") {
				t.Errorf("wrk did not get its pages:\n%s", out)
			}
		},
	},
}

// TestCellServers runs redis-server and nginx in containers through
// syscell's runtime over runc: recorded there under a short load (the
// syscell.record annotation), then under that per-library policy
// (syscell.policy) with the same load, which must be served with no call
// denied.
func TestCellServers(t *testing.T) {
	requireRoot(t)
	for _, srv := range containerServers {
		need(t, srv.setUp(t, t.TempDir(), 0)[0], srv.name)
		for _, tool := range srv.tools {
			need(t, tool, srv.name)
		}
	}
	tl := setUpCell(t)
	dirs := newSupervisorDirs(t)
	sup := startSupervisor(t, tl, dirs)
	s := newShim(t, tl, dirs, runtimes[0])
	for _, srv := range containerServers {
		t.Run(srv.name, func(t *testing.T) {
			policyName := "server-" + srv.name
			id := serveInContainer(t, s, srv, map[string]string{"syscell.record": policyName})
			copyFile(t, waitRecording(t, dirs, policyName, id), filepath.Join(dirs.PolicyDir, policyName+".toml"), 0o644)
			id = serveInContainer(t, s, srv, map[string]string{"syscell.policy": policyName})
			line := sup.waitLog(t, "container "+id+": process")
			if m := regexp.MustCompile(` (\d+) denied$`).FindStringSubmatch(line); m == nil || m[1] != "0" {
				t.Errorf("%s under its policy: %s", srv.name, line)
			}
		})
	}
}

// serveInContainer runs srv in a container with annotations, loads it,
// stops it with SIGTERM (which the runtime passes on) and returns the
// container's id.
func serveInContainer(t *testing.T, s *shim, srv containerServer, annotations map[string]string) string {
	t.Helper()
	tmp := t.TempDir()
	// nginx's workers run as www-data.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	id := containerID(t, s.name)
	bundle := cellBundle(t, s.tl, hostbundle.Options{Args: srv.setUp(t, tmp, port), Tmp: tmp, Annotations: annotations, HostNet: true, HostEtc: true})
	cmd := commandContext(t.Context(), s.command("run", "--bundle", bundle, id))
	logFile, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); !srv.ready(port); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it served: %v\n%s", srv.name, err, readFile(t, logFile.Name()))
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("%s does not answer on port %d\n%s", srv.name, port, readFile(t, logFile.Name()))
		}
	}
	srv.load(t, port)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Errorf("%s did not stop cleanly: %v\n%s", srv.name, err, readFile(t, logFile.Name()))
	}
	return id
}
