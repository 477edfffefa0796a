#!/bin/sh
# Entrypoint of the Kafka-API broker image (Tansu): runs the command it is given
# (`tansu broker --listener-url … --advertised-listener-url …`), or the broker on 9092
# advertising localhost:9092 when given none.
set -eu
if [ "$#" -eq 0 ] || [ "$*" = "tansu" ]; then
  set -- tansu broker --listener-url tcp://0.0.0.0:9092 --advertised-listener-url tcp://localhost:9092 --storage-engine memory://tansu/
fi
exec "$@"
