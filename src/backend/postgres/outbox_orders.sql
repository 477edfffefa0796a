-- Creates orders 1..$1, all 'new'.
INSERT INTO orders (id) SELECT generate_series(1, $1::bigint)
