#!/usr/bin/env bash
# One recorded run of Debian's nginx: master and two workers (addrfilter's
# worker_processes auto, on two cores), workers as www-data, sendfile on,
# access log off, serving a small static page on 127.0.0.1, loaded by wrk
# with 200 connections (addrfilter's -c 200) on 2 threads for
# NGINX_SECONDS (default 10; addrfilter ran 30), then stopped with SIGTERM
# (nginx's fast shutdown: the master stops its workers and exits).
#
#   bench/servers/nginx.sh record OUT.toml [syscell record flags, e.g. --merge FILE]
#
# or sourced by throughput.sh (lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(nginx wrk)
NGINX_SECONDS=${NGINX_SECONDS:-10}

server_prepare() {
	mkdir -p "$WORK/www" "$WORK/temp"
	cat >"$WORK/www/index.html" <<'HTML'
<!DOCTYPE html>
<html>
<head><title>syscell</title></head>
<body><p>A small static page for the nginx recording.</p></body>
</html>
HTML
	chmod -R a+rX "$WORK/www"
	cat >"$WORK/nginx.conf" <<CONF
user www-data;
worker_processes 2;
pid $WORK/nginx.pid;
error_log stderr notice;

events {
	worker_connections 1024;
}

http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 65;
	access_log off;
	client_body_temp_path $WORK/temp/client_body;
	proxy_temp_path $WORK/temp/proxy;
	fastcgi_temp_path $WORK/temp/fastcgi;
	uwsgi_temp_path $WORK/temp/uwsgi;
	scgi_temp_path $WORK/temp/scgi;

	server {
		listen 127.0.0.1:$PORT;
		root $WORK/www;
		index index.html;
		location / {
		}
	}
}
CONF
	SERVER_CMD=(nginx -p "$WORK" -e stderr -c "$WORK/nginx.conf"
		-g 'daemon off; master_process on;')
}

server_ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/") == 200 ]]; }

server_load() {
	timeout $((NGINX_SECONDS + 30)) wrk -t 2 -c 200 -d "${NGINX_SECONDS}s" --latency "http://127.0.0.1:$PORT/index.html"
}

server_quick() { NGINX_SECONDS=2; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	server_main "$@"
fi
