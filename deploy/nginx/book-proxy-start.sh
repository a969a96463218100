#!/bin/sh
# The lecture hall proxy's start: HTTPS set up as BOOK_TLS says, then nginx.
#
#   BOOK_TLS=off (default)  plain HTTP on port 80, as before
#   BOOK_TLS=on             HTTPS on port 443 as well, and HTTP answers with a redirect to it
#                           (all but /nginx-health, which the health check asks over HTTP)
#
# The certificate: fullchain.pem and privkey.pem from /etc/nginx/book-tls (compose.tls.yaml
# mounts BOOK_TLS_DIR there; the names certbot gives them). Where that folder holds neither, a
# self-signed certificate is made at the first start for BOOK_TLS_NAMES (comma-separated host
# names and addresses, default localhost,127.0.0.1) and kept in /var/lib/book-tls (a volume),
# so a browser that was told to accept it sees the same one after a restart; it is made again
# when the names change or it has less than 30 days left.
#   BOOK_HTTPS_PORT  the port readers reach HTTPS on (the redirect's; compose publishes it)
# The three paths can be moved with BOOK_TLS_MOUNTED, BOOK_TLS_STATE and BOOK_TLS_CONF (the
# tests run this script outside the image).
set -eu

MOUNTED=${BOOK_TLS_MOUNTED:-/etc/nginx/book-tls}
STATE=${BOOK_TLS_STATE:-/var/lib/book-tls}
CONF=${BOOK_TLS_CONF:-/etc/nginx/book-tls.d/tls.conf}

say() { echo "book-proxy-start: $*" >&2; }

start_nginx() {
  # the nginx image's own entrypoint where there is one (its scripts in /docker-entrypoint.d)
  if [ "$#" -gt 0 ] && [ -x /docker-entrypoint.sh ]; then exec /docker-entrypoint.sh "$@"; fi
  if [ "$#" -gt 0 ]; then exec "$@"; fi
  exit 0
}

rm -f "$CONF"  # nothing of an earlier start's setting survives a change of BOOK_TLS
case "$(echo "${BOOK_TLS:-off}" | tr 'A-Z' 'a-z')" in
  off | 0 | false | no | "") start_nginx "$@" ;;
  on | 1 | true | yes) ;;
  *) say "BOOK_TLS=${BOOK_TLS}: use on or off"; exit 1 ;;
esac

port=${BOOK_HTTPS_PORT:-443}
case "$port" in
  "" | *[!0-9]*) say "BOOK_HTTPS_PORT=${port}: must be a port number"; exit 1 ;;
esac

if [ -e "$MOUNTED/fullchain.pem" ] || [ -e "$MOUNTED/privkey.pem" ]; then
  if [ ! -s "$MOUNTED/fullchain.pem" ] || [ ! -s "$MOUNTED/privkey.pem" ]; then
    say "BOOK_TLS_DIR must hold both fullchain.pem and privkey.pem (it holds one, or an empty one)"
    exit 1
  fi
  cert=$MOUNTED/fullchain.pem
  key=$MOUNTED/privkey.pem
  say "HTTPS with the certificate in BOOK_TLS_DIR"
else
  names=${BOOK_TLS_NAMES:-localhost,127.0.0.1}
  cert=$STATE/self-signed.pem
  key=$STATE/self-signed.key
  if [ ! -s "$cert" ] || [ ! -s "$key" ] || [ "$(cat "$STATE/names" 2>/dev/null)" != "$names" ] \
      || ! openssl x509 -checkend 2592000 -noout -in "$cert" >/dev/null 2>&1; then
    if ! command -v openssl >/dev/null 2>&1; then
      say "no openssl in this image to make a certificate: put fullchain.pem and privkey.pem in BOOK_TLS_DIR"
      exit 1
    fi
    san=""
    first=""
    for name in $(echo "$names" | tr ',' ' '); do
      case "$name" in  # digits and dots, or hex digits with colons: an address; else a name
        *[!0-9.]*) case "$name" in
                     *:*) case "$name" in *[!0-9a-fA-F.:]*) kind=DNS ;; *) kind=IP ;; esac ;;
                     *) kind=DNS ;;
                   esac ;;
        *) kind=IP ;;
      esac
      san="${san:+$san,}$kind:$name"
      first=${first:-$name}
    done
    if [ -z "$first" ]; then say "BOOK_TLS_NAMES names no host"; exit 1; fi
    mkdir -p "$STATE"
    (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -days 397 -subj "/CN=$first" -addext "subjectAltName=$san" \
        -keyout "$key.new" -out "$cert.new" 2>/dev/null) \
      || { say "openssl could not make a certificate for $names"; exit 1; }
    mv "$key.new" "$key"
    mv "$cert.new" "$cert"
    echo "$names" > "$STATE/names"
    say "made a self-signed certificate for $san (browsers will ask to accept it)"
  else
    say "HTTPS with the self-signed certificate made earlier for $names"
  fi
fi

# HTTP/2 is a listen parameter before nginx 1.25.1 (Debian bookworm's 1.22), a directive after
version=$(nginx -v 2>&1 | sed -n 's|.*nginx/\([0-9][0-9.]*\).*|\1|p')
if [ -n "$version" ] && [ "$(printf '%s\n%s\n' 1.25.1 "$version" | sort -V | head -n1)" = 1.25.1 ]; then
  listen="listen 443 ssl;
http2 on;"
else
  listen="listen 443 ssl http2;"
fi
if [ "$port" = 443 ]; then to="https://\$host\$request_uri"; else to="https://\$host:$port\$request_uri"; fi

mkdir -p "$(dirname "$CONF")"
cat > "$CONF" <<EOF
# Written by book-proxy-start at $(date -u +%Y-%m-%dT%H:%M:%SZ) (BOOK_TLS=on); included in the book's server.
$listen
ssl_certificate $cert;
ssl_certificate_key $key;
ssl_protocols TLSv1.2 TLSv1.3;
ssl_session_cache shared:book_tls:10m;
ssl_session_timeout 1h;
# Plain HTTP is sent to HTTPS (308 keeps a POST a POST), all but the health check's path.
set \$book_to_https "";
if (\$scheme = http) { set \$book_to_https "$to"; }
if (\$uri = /nginx-health) { set \$book_to_https ""; }
if (\$book_to_https) { return 308 \$book_to_https; }
EOF
start_nginx "$@"
