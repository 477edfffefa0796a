-- chancy 0.26.0's schema, as its own migrations make it (print_schema.py: Chancy.migrate()
-- with the default plugins, then pg_dump --schema-only, the schema's name taken out; chancy
-- ships no SQL file). A test checks that chancy's migrations still make exactly these tables and
-- indexes. dbq-bench's additions follow after the marker line.

CREATE TABLE chancy_jobs (
    id uuid NOT NULL,
    queue text NOT NULL,
    func text NOT NULL,
    kwargs jsonb DEFAULT '{}'::json NOT NULL,
    limits jsonb DEFAULT '[]'::json NOT NULL,
    meta jsonb DEFAULT '{}'::json NOT NULL,
    state character varying(25) DEFAULT 'pending'::character varying NOT NULL,
    priority integer DEFAULT 0,
    attempts integer DEFAULT 0,
    max_attempts integer DEFAULT 1 NOT NULL,
    taken_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    scheduled_at timestamp with time zone DEFAULT now() NOT NULL,
    unique_key text,
    errors jsonb DEFAULT '[]'::json NOT NULL,
    claim_id uuid
);

CREATE UNLOGGED TABLE chancy_leader (
    id bigint NOT NULL,
    worker_id text NOT NULL,
    first_seen timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE UNLOGGED SEQUENCE chancy_leader_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE chancy_leader_id_seq OWNED BY chancy_leader.id;

CREATE TABLE chancy_metric_definitions (
    id bigint NOT NULL,
    key text NOT NULL COLLATE pg_catalog."C",
    metric_type text NOT NULL,
    unit text NOT NULL,
    CONSTRAINT chancy_metric_definitions_metric_type_check CHECK ((metric_type = ANY (ARRAY['counter'::text, 'gauge'::text, 'histogram'::text])))
);

CREATE SEQUENCE chancy_metric_definitions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE chancy_metric_definitions_id_seq OWNED BY chancy_metric_definitions.id;

CREATE TABLE chancy_metrics (
    metric_id bigint NOT NULL,
    resolution integer NOT NULL,
    chunk timestamp with time zone NOT NULL,
    session_id uuid NOT NULL,
    worker_id text NOT NULL,
    buckets timestamp with time zone[] NOT NULL,
    counts bigint[],
    totals double precision[],
    minimums double precision[],
    maximums double precision[],
    gauges double precision[],
    sampled_at timestamp with time zone[] NOT NULL
);

CREATE UNLOGGED TABLE chancy_queue_rate_limits (
    queue character varying(255) NOT NULL,
    window_start integer NOT NULL,
    count integer DEFAULT 0 NOT NULL
);

CREATE TABLE chancy_queues (
    name text NOT NULL,
    state text DEFAULT 'active'::text NOT NULL,
    concurrency integer DEFAULT 1,
    tags text[],
    executor text DEFAULT 'chancy.executors.process.ProcessExecutor'::text NOT NULL,
    executor_options jsonb,
    polling_interval integer DEFAULT 1,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    rate_limit integer,
    rate_limit_window integer,
    resume_at timestamp with time zone,
    eager_polling boolean DEFAULT false NOT NULL
);

CREATE TABLE chancy_schema_version (
    version_of character varying(255) NOT NULL,
    version integer
);

CREATE UNLOGGED TABLE chancy_workers (
    worker_id text NOT NULL,
    tags text[],
    queues text[],
    last_seen timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE chancy_workflow_steps (
    id integer NOT NULL,
    workflow_id uuid,
    step_id text NOT NULL,
    job_data jsonb NOT NULL,
    dependencies jsonb NOT NULL,
    job_id uuid,
    created_at timestamp with time zone DEFAULT now(),
    updated_at timestamp with time zone DEFAULT now()
);

CREATE SEQUENCE chancy_workflow_steps_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE chancy_workflow_steps_id_seq OWNED BY chancy_workflow_steps.id;

CREATE TABLE chancy_workflows (
    id uuid NOT NULL,
    name text NOT NULL,
    state text NOT NULL,
    created_at timestamp with time zone DEFAULT now(),
    updated_at timestamp with time zone DEFAULT now()
);

ALTER TABLE ONLY chancy_leader ALTER COLUMN id SET DEFAULT nextval('chancy_leader_id_seq'::regclass);

ALTER TABLE ONLY chancy_metric_definitions ALTER COLUMN id SET DEFAULT nextval('chancy_metric_definitions_id_seq'::regclass);

ALTER TABLE ONLY chancy_workflow_steps ALTER COLUMN id SET DEFAULT nextval('chancy_workflow_steps_id_seq'::regclass);

ALTER TABLE ONLY chancy_jobs
    ADD CONSTRAINT chancy_jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chancy_leader
    ADD CONSTRAINT chancy_leader_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chancy_leader
    ADD CONSTRAINT chancy_leader_worker_id_unique UNIQUE (worker_id);

ALTER TABLE ONLY chancy_metric_definitions
    ADD CONSTRAINT chancy_metric_definitions_key_key UNIQUE (key);

ALTER TABLE ONLY chancy_metric_definitions
    ADD CONSTRAINT chancy_metric_definitions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chancy_metrics
    ADD CONSTRAINT chancy_metrics_pkey PRIMARY KEY (metric_id, resolution, chunk, session_id);

ALTER TABLE ONLY chancy_queue_rate_limits
    ADD CONSTRAINT chancy_queue_rate_limits_pkey PRIMARY KEY (queue);

ALTER TABLE ONLY chancy_queues
    ADD CONSTRAINT chancy_queues_pkey PRIMARY KEY (name);

ALTER TABLE ONLY chancy_schema_version
    ADD CONSTRAINT chancy_schema_version_pkey PRIMARY KEY (version_of);

ALTER TABLE ONLY chancy_workers
    ADD CONSTRAINT chancy_workers_pkey PRIMARY KEY (worker_id);

ALTER TABLE ONLY chancy_workflow_steps
    ADD CONSTRAINT chancy_workflow_steps_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chancy_workflows
    ADD CONSTRAINT chancy_workflows_pkey PRIMARY KEY (id);

CREATE INDEX chancy_idx_jobs_fetch_prune ON chancy_jobs USING btree (queue, state, attempts, scheduled_at, priority DESC, id DESC) WHERE ((state)::text = ANY ((ARRAY['pending'::character varying, 'retrying'::character varying])::text[]));

CREATE INDEX chancy_idx_jobs_queue_state ON chancy_jobs USING btree (queue, state);

CREATE UNIQUE INDEX chancy_jobs_unique_key ON chancy_jobs USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND ((state)::text <> ALL ((ARRAY['succeeded'::character varying, 'failed'::character varying])::text[])));

CREATE INDEX chancy_metrics_expiry_idx ON chancy_metrics USING btree (resolution, chunk);

CREATE INDEX chancy_workflow_steps_workflow_id_idx ON chancy_workflow_steps USING btree (workflow_id);

CREATE INDEX chancy_workflows_active_id_idx ON chancy_workflows USING btree (id) WHERE (state = ANY (ARRAY['pending'::text, 'running'::text]));

CREATE INDEX chancy_workflows_state_idx ON chancy_workflows USING btree (state);

CREATE UNIQUE INDEX chancy_workflows_steps_unique_idx ON chancy_workflow_steps USING btree (workflow_id, step_id);

ALTER TABLE ONLY chancy_metrics
    ADD CONSTRAINT chancy_metrics_metric_id_fkey FOREIGN KEY (metric_id) REFERENCES chancy_metric_definitions(id) ON DELETE RESTRICT;

ALTER TABLE ONLY chancy_workflow_steps
    ADD CONSTRAINT chancy_workflow_steps_workflow_id_fkey FOREIGN KEY (workflow_id) REFERENCES chancy_workflows(id) ON DELETE CASCADE;

INSERT INTO chancy_schema_version VALUES ('chancy', 8);
INSERT INTO chancy_schema_version VALUES ('metrics', 2);
INSERT INTO chancy_schema_version VALUES ('workflow', 3);

-- dbq-bench: below this line, not chancy's.
--
-- chancy's job ids are UUIDs (its chancy_uuid(): 100 ns time, then random bits, so that
-- ORDER BY id is the order of pushing); the harness's are numbers. Each job carries the
-- harness's number in its kwargs (`dbq_job`), and the proof reads jobs by it.
CREATE SEQUENCE chancy_job_number;

CREATE FUNCTION chancy_job_uuid() RETURNS uuid
LANGUAGE sql VOLATILE AS $$
  SELECT ('0'
          || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 10000000)::bigint & x'FFFFFFFFFFFFFF'::bigint), 14, '0')
          || '7'
          || lpad(to_hex(x'8000000000000000'::bigint | floor(random() * 4611686018427387904)::bigint), 16, '0'))::uuid
$$;

CREATE INDEX chancy_jobs_dbq_job ON chancy_jobs (((kwargs->>'dbq_job')::bigint));

-- Each job in the harness's words, by the harness's number (design.toml's [states] view).
CREATE VIEW chancy_job_state AS
SELECT (kwargs->>'dbq_job')::bigint AS id,
       (CASE state WHEN 'pending'   THEN 'pending'
                   WHEN 'retrying'  THEN 'pending'
                   WHEN 'running'   THEN 'processing'
                   WHEN 'succeeded' THEN 'done'
                   WHEN 'failed'    THEN 'dead_letter'
                   ELSE state
        END)::varchar AS status,
       NULL::int AS retry_count,
       kwargs AS payload
FROM   chancy_jobs;
