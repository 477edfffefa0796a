#!/bin/sh
# Entrypoint of the locally built RabbitMQ image: the part of the official image's
# docker-entrypoint.sh that dbq-bench relies on. Arguments starting with `-` go to the
# broker's Erlang VM (`-rabbit default_pass <<"…">>`); the node is rabbit@localhost with its
# data in /var/lib/rabbitmq, listening on 5672, logging to stdout, with the plugins
# RABBITMQ_ENABLED_PLUGINS names (none unless set; dbq-bench sets rabbitmq_management, 15672).
set -eu
if [ "${1#-}" != "${1:-}" ]; then set -- rabbitmq-server "$@"; fi
if [ "${1:-}" = "rabbitmq-server" ]; then
  shift
  export HOME=/var/lib/rabbitmq RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_LOGS=- \
    RABBITMQ_ENABLED_PLUGINS="${RABBITMQ_ENABLED_PLUGINS:-}"
  exec /usr/lib/rabbitmq/bin/rabbitmq-server "$@"
fi
exec "$@"
