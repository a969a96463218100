#!/usr/bin/env bash
# Local stand-ins for the public nginx and redis images, for machines that cannot reach a
# container registry (podman, as root). Docker users never need this: compose.yaml defaults to
# the upstream images.
#
#   deploy/local-bases.sh        # makes (once, then reuses):
#     localhost/book-debian:bookworm   debootstrap'd Debian (the mirror apt already uses)
#     localhost/book-nginx:bookworm    Debian's nginx + curl, laid out like the nginx image
#     localhost/book-redis:bookworm    Debian's redis-server, laid out like redis:7-bookworm
#
# then:  NGINX_BASE=localhost/book-nginx:bookworm REDIS_IMAGE=localhost/book-redis:bookworm \
#        BOOK_REDIS_PASSWORD="$(openssl rand -hex 24)" \
#        podman-compose up -d
# (the optional Prometheus, `--profile prometheus`, builds on DEBIAN_BASE=localhost/book-debian:bookworm)
set -euo pipefail
cd "$(dirname "$0")"

DEBIAN=localhost/book-debian:bookworm
NGINX=localhost/book-nginx:bookworm
REDIS=localhost/book-redis:bookworm
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
WORK=$(mktemp -d)
trap '$SUDO rm -rf "$WORK"' EXIT
printf '[containers]\ndefault_ulimits = []\n' > "$WORK/containers.conf"
pm() { $SUDO env CONTAINERS_CONF="$WORK/containers.conf" podman "$@"; }

mirror() {  # the first Debian mirror apt is configured with (deb822 or one-line sources)
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | grep -v security | head -n1 || true)
  [ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | head -n1 || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

if ! pm image exists "$DEBIAN"; then
  m=$(mirror)
  echo "== debootstrap bookworm from $m -> $DEBIAN"
  $SUDO debootstrap --variant=minbase --include=ca-certificates bookworm "$WORK/rootfs" "$m"
  $SUDO rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
  $SUDO tar -C "$WORK/rootfs" -c . | pm import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' - "$DEBIAN"
fi

build() {  # image, Containerfile text
  if pm image exists "$1"; then echo "reusing $1"; return; fi
  echo "== $1"
  printf '%s\n' "$2" > "$WORK/Containerfile"
  pm build --isolation=chroot --network=host -f "$WORK/Containerfile" -t "$1" "$WORK"
}

APT='apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends'
build "$NGINX" "FROM $DEBIAN
RUN $APT nginx curl && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/* \\
 && mkdir -p /var/cache/nginx /usr/share/nginx/html \\
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD [\"nginx\", \"-g\", \"daemon off;\"]"

build "$REDIS" "FROM $DEBIAN
RUN $APT redis-server && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD [\"redis-server\", \"--protected-mode\", \"no\"]"

echo "local bases ready: NGINX_BASE=$NGINX REDIS_IMAGE=$REDIS DEBIAN_BASE=$DEBIAN"
