-- Queue depth of a declared design: jobs in one of its waiting states.
SELECT count(*) FROM {table} WHERE {state} IN ({waiting})
