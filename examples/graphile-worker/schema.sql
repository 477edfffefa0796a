-- graphile_worker 0.14.1's schema (Rust; migrations crate graphile_worker_migrations 0.4.24), as
-- its migrator installs it: its install step and every migration's statements in order, the
-- schema's name taken out (the harness installs it in the run's schema), each migration
-- recorded as applied. `dbq-bench-graphile-worker --print-schema` prints it; a test compares.
-- dbq-bench's additions follow after the marker line.

create table if not exists migrations (
    id int primary key,
    ts timestamptz default now() not null,
    breaking boolean not null default false
);

-- m000001
create table job_queues (
    queue_name text not null primary key,
    job_count int not null,
    locked_at timestamptz,
    locked_by text
);

alter table job_queues enable row level security;

create table jobs (
    id bigserial primary key,
    queue_name text not null,
    task_identifier text not null,
    payload json default '{}'::json not null,
    priority int default 0 not null,
    run_at timestamptz default now() not null,
    attempts int default 0 not null,
    max_attempts int default 25 not null,
    last_error text,
    created_at timestamp with time zone not null default now(),
    updated_at timestamp with time zone not null default now()
);

alter table jobs enable row level security;

create index on jobs (priority, run_at, id);

create function tg__update_timestamp() returns trigger as $$
    begin
        new.updated_at = greatest(now(), old.updated_at + interval '1 millisecond');
        return new;
    end;
$$ language plpgsql;

create trigger _100_timestamps before update on jobs for each row execute procedure tg__update_timestamp();

create function jobs__decrease_job_queue_count() returns trigger as $$
    declare
        v_new_job_count int;
    begin
        update job_queues
            set job_count = job_queues.job_count - 1
            where queue_name = old.queue_name
            returning job_count into v_new_job_count;

        if v_new_job_count <= 0 then
            delete from job_queues where queue_name = old.queue_name and job_count <= 0;
        end if;

        return old;
    end;
$$ language plpgsql;

create function jobs__increase_job_queue_count() returns trigger as $$
    begin
        insert into job_queues(queue_name, job_count)
            values(new.queue_name, 1)
            on conflict (queue_name)
            do update
            set job_count = job_queues.job_count + 1;

        return new;
    end;
    $$ language plpgsql;

create trigger _500_increase_job_queue_count after insert on jobs for each row execute procedure jobs__increase_job_queue_count();

create trigger _500_decrease_job_queue_count after delete on jobs for each row execute procedure jobs__decrease_job_queue_count();

create trigger _500_increase_job_queue_count_update after update of queue_name on jobs for each row execute procedure jobs__increase_job_queue_count();

create trigger _500_decrease_job_queue_count_update after update of queue_name on jobs for each row execute procedure jobs__decrease_job_queue_count();

create function tg_jobs__notify_new_jobs() returns trigger as $$
begin
    perform pg_notify('jobs:insert', '');
    return new;
end;
$$ language plpgsql;

create trigger _900_notify_worker after insert on jobs for each statement execute procedure tg_jobs__notify_new_jobs();

create function add_job(
    identifier text,
    payload json = '{}',
    queue_name text = null, -- was gen_random_uuid(), but later removed dependency
    run_at timestamptz = now(),
    max_attempts int = 25
) returns jobs as $$
    insert into jobs(task_identifier, payload, queue_name, run_at, max_attempts) values(identifier, payload, queue_name, run_at, max_attempts) returning *;
$$ language sql;

create function get_job(worker_id text, task_identifiers text[] = null, job_expiry interval = interval '4 hours') returns jobs as $$
declare
    v_job_id bigint;
    v_queue_name text;
    v_default_job_max_attempts text = '25';
    v_row jobs;
begin
    if worker_id is null or length(worker_id) < 10 then
        raise exception 'invalid worker id';
    end if;

    select job_queues.queue_name, jobs.id into v_queue_name, v_job_id
        from jobs
        inner join job_queues using (queue_name)
        where (locked_at is null or locked_at < (now() - job_expiry))
        and run_at <= now()
        and attempts < max_attempts
        and (task_identifiers is null or task_identifier = any(task_identifiers))
        order by priority asc, run_at asc, id asc
        limit 1
        for update of job_queues
        skip locked;

    if v_queue_name is null then
        return null;
    end if;

    update job_queues
        set
            locked_by = worker_id,
            locked_at = now()
        where job_queues.queue_name = v_queue_name;

    update jobs
        set attempts = attempts + 1
        where id = v_job_id
        returning * into v_row;

    return v_row;
end;
$$ language plpgsql;

create function complete_job(worker_id text, job_id bigint) returns jobs as $$
declare
    v_row jobs;
begin
    delete from jobs
        where id = job_id
        returning * into v_row;

    update job_queues
        set locked_by = null, locked_at = null
        where queue_name = v_row.queue_name and locked_by = worker_id;

    return v_row;
end;
$$ language plpgsql;

create function fail_job(worker_id text, job_id bigint, error_message text) returns jobs as $$
declare
    v_row jobs;
begin
    update jobs
        set
            last_error = error_message,
            run_at = greatest(now(), run_at) + (exp(least(attempts, 10))::text || ' seconds')::interval
        where id = job_id
        returning * into v_row;

    update job_queues
        set locked_by = null, locked_at = null
        where queue_name = v_row.queue_name and locked_by = worker_id;

    return v_row;
end;
$$ language plpgsql;

insert into migrations (id, breaking) values (1, true);

-- m000002
alter table jobs add column key text unique check(length(key) > 0);

alter table jobs add locked_at timestamptz;

alter table jobs add locked_by text;

update jobs
    set locked_at = q.locked_at, locked_by = q.locked_by
    from job_queues q
    where q.queue_name = jobs.queue_name
    and q.locked_at is not null;

drop function if exists add_job(
    identifier text,
    payload json,
    queue_name text,
    run_at timestamptz,
    max_attempts int
);

create function add_job(
    identifier text,
    payload json = '{}',
    queue_name text = null,
    run_at timestamptz = now(),
    max_attempts int = 25,
    job_key text = null
) returns jobs as $$
declare
    v_job jobs;
begin
    if job_key is not null then
        -- Upsert job
        insert into jobs (task_identifier, payload, queue_name, run_at, max_attempts, key)
            values(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts,
                job_key
            )
            on conflict (key) do update set
                -- update all job details other than queue_name, which we want to keep
                -- the same unless explicitly provided
                task_identifier=excluded.task_identifier,
                payload=excluded.payload,
                queue_name=coalesce(add_job.queue_name, jobs.queue_name),
                max_attempts=excluded.max_attempts,
                run_at=excluded.run_at,

                -- always reset error/retry state
                attempts=0,
                last_error=null
            where jobs.locked_at is null
            returning *
            into v_job;

        -- If upsert succeeded (insert or update), return early
        if not (v_job is null) then
            return v_job;
        end if;

        -- Upsert failed -> there must be an existing job that is locked. Remove
        -- existing key to allow a new one to be inserted, and prevent any
        -- subsequent retries by bumping attempts to the max allowed.
        update jobs
            set
                key = null,
                attempts = jobs.max_attempts
            where key = job_key;
    end if;

    -- insert the new job. Assume no conflicts due to the update above
    insert into jobs(task_identifier, payload, queue_name, run_at, max_attempts, key)
        values(
            identifier,
            payload,
            queue_name,
            run_at,
            max_attempts,
            job_key
        )
        returning *
        into v_job;

    return v_job;
end;
$$ language plpgsql volatile;

create function remove_job(
    job_key text
) returns jobs as $$
    delete from jobs
        where key = job_key
        and locked_at is null
    returning *;
$$ language sql strict volatile;

create or replace function get_job(worker_id text, task_identifiers text[] = null, job_expiry interval = interval '4 hours') returns jobs as $$
declare
    v_job_id bigint;
    v_queue_name text;
    v_row jobs;
    v_now timestamptz = now();
begin
    if worker_id is null or length(worker_id) < 10 then
        raise exception 'invalid worker id';
    end if;

    select job_queues.queue_name, jobs.id into v_queue_name, v_job_id
        from jobs
        inner join job_queues using (queue_name)
        where (job_queues.locked_at is null or job_queues.locked_at < (v_now - job_expiry))
        and run_at <= v_now
        and attempts < max_attempts
        and (task_identifiers is null or task_identifier = any(task_identifiers))
        order by priority asc, run_at asc, id asc
        limit 1
        for update of job_queues
        skip locked;

    if v_queue_name is null then
        return null;
    end if;

    update job_queues
        set
            locked_by = worker_id,
            locked_at = v_now
        where job_queues.queue_name = v_queue_name;

    update jobs
        set
            attempts = attempts + 1,
            locked_by = worker_id,
            locked_at = v_now
        where id = v_job_id
        returning * into v_row;

    return v_row;
end;
$$ language plpgsql volatile;

create or replace function fail_job(worker_id text, job_id bigint, error_message text) returns jobs as $$
declare
    v_row jobs;
begin
    update jobs
        set
            last_error = error_message,
            run_at = greatest(now(), run_at) + (exp(least(attempts, 10))::text || ' seconds')::interval,
            locked_by = null,
            locked_at = null
        where id = job_id and locked_by = worker_id
        returning * into v_row;

    update job_queues
        set locked_by = null, locked_at = null
        where queue_name = v_row.queue_name and locked_by = worker_id;

    return v_row;
end;
$$ language plpgsql volatile strict;

insert into migrations (id, breaking) values (2, false);

-- m000003
alter table jobs alter column queue_name drop not null;

create or replace function add_job(
    identifier text,
    payload json = '{}',
    queue_name text = null,
    run_at timestamptz = now(),
    max_attempts int = 25,
    job_key text = null
) returns jobs as $$
declare
    v_job jobs;
begin
    if job_key is not null then
        -- Upsert job
        insert into jobs (task_identifier, payload, queue_name, run_at, max_attempts, key)
            values(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts,
                job_key
            )
            on conflict (key) do update set
                task_identifier=excluded.task_identifier,
                payload=excluded.payload,
                queue_name=excluded.queue_name,
                max_attempts=excluded.max_attempts,
                run_at=excluded.run_at,

                -- always reset error/retry state
                attempts=0,
                last_error=null
            where jobs.locked_at is null
            returning *
            into v_job;

        -- If upsert succeeded (insert or update), return early
        if not (v_job is null) then
            return v_job;
        end if;

        -- Upsert failed -> there must be an existing job that is locked. Remove
        -- existing key to allow a new one to be inserted, and prevent any
        -- subsequent retries by bumping attempts to the max allowed.
        update jobs
            set
                key = null,
                attempts = jobs.max_attempts
            where key = job_key;
    end if;

    -- insert the new job. Assume no conflicts due to the update above
    insert into jobs(task_identifier, payload, queue_name, run_at, max_attempts, key)
        values(
            identifier,
            payload,
            queue_name,
            run_at,
            max_attempts,
            job_key
        )
        returning *
        into v_job;

    return v_job;
end;
$$ language plpgsql volatile;

create or replace function get_job(worker_id text, task_identifiers text[] = null, job_expiry interval = interval '4 hours') returns jobs as $$
declare
    v_job_id bigint;
    v_queue_name text;
    v_row jobs;
    v_now timestamptz = now();
begin
    if worker_id is null or length(worker_id) < 10 then
        raise exception 'invalid worker id';
    end if;

    select jobs.queue_name, jobs.id into v_queue_name, v_job_id
        from jobs
        where (jobs.locked_at is null or jobs.locked_at < (v_now - job_expiry))
        and (
            jobs.queue_name is null
            or
            exists (
                select 1
                from job_queues
                where job_queues.queue_name = jobs.queue_name
                and (job_queues.locked_at is null or job_queues.locked_at < (v_now - job_expiry))
                for update
                skip locked
            )
        )
        and run_at <= v_now
        and attempts < max_attempts
        and (task_identifiers is null or task_identifier = any(task_identifiers))
        order by priority asc, run_at asc, id asc
        limit 1
        for update
        skip locked;

    if v_job_id is null then
        return null;
    end if;

    if v_queue_name is not null then
        update job_queues
            set
                locked_by = worker_id,
                locked_at = v_now
            where job_queues.queue_name = v_queue_name;
    end if;

    update jobs
        set
            attempts = attempts + 1,
            locked_by = worker_id,
            locked_at = v_now
        where id = v_job_id
        returning * into v_row;

    return v_row;
end;
$$ language plpgsql volatile;

create or replace function fail_job(worker_id text, job_id bigint, error_message text) returns jobs as $$
declare
    v_row jobs;
begin
    update jobs
        set
            last_error = error_message,
            run_at = greatest(now(), run_at) + (exp(least(attempts, 10))::text || ' seconds')::interval,
            locked_by = null,
            locked_at = null
        where id = job_id and locked_by = worker_id
        returning * into v_row;

    if v_row.queue_name is not null then
        update job_queues
            set locked_by = null, locked_at = null
            where queue_name = v_row.queue_name and locked_by = worker_id;
    end if;

    return v_row;
end;
$$ language plpgsql volatile strict;

create or replace function complete_job(worker_id text, job_id bigint) returns jobs as $$
declare
    v_row jobs;
begin
    delete from jobs
        where id = job_id
        returning * into v_row;

    if v_row.queue_name is not null then
        update job_queues
            set locked_by = null, locked_at = null
            where queue_name = v_row.queue_name and locked_by = worker_id;
    end if;

    return v_row;
end;
$$ language plpgsql;

drop trigger _500_increase_job_queue_count on jobs;

drop trigger _500_decrease_job_queue_count on jobs;

drop trigger _500_increase_job_queue_count_update on jobs;

drop trigger _500_decrease_job_queue_count_update on jobs;

create trigger _500_increase_job_queue_count after insert on jobs for each row when (NEW.queue_name is not null) execute procedure jobs__increase_job_queue_count();

create trigger _500_decrease_job_queue_count after delete on jobs for each row when (OLD.queue_name is not null) execute procedure jobs__decrease_job_queue_count();

create trigger _500_increase_job_queue_count_update after update of queue_name on jobs for each row when (NEW.queue_name is distinct from OLD.queue_name AND NEW.queue_name is not null) execute procedure jobs__increase_job_queue_count();

create trigger _500_decrease_job_queue_count_update after update of queue_name on jobs for each row when (NEW.queue_name is distinct from OLD.queue_name AND OLD.queue_name is not null) execute procedure jobs__decrease_job_queue_count();

insert into migrations (id, breaking) values (3, true);

-- m000004
drop function add_job(text, json, text, timestamptz, int, text);

create function add_job(
    identifier text,
    payload json = null,
    queue_name text = null,
    run_at timestamptz = null,
    max_attempts int = null,
    job_key text = null,
    priority int = null
) returns jobs as $$
declare
    v_job jobs;
begin
    -- Apply rationality checks
    if length(identifier) > 128 then
        raise exception 'Task identifier is too long (max length: 128).' using errcode = 'GWBID';
    end if;
    if queue_name is not null and length(queue_name) > 128 then
        raise exception 'Job queue name is too long (max length: 128).' using errcode = 'GWBQN';
    end if;
    if job_key is not null and length(job_key) > 512 then
        raise exception 'Job key is too long (max length: 512).' using errcode = 'GWBJK';
    end if;
    if max_attempts < 1 then
        raise exception 'Job maximum attempts must be at least 1' using errcode = 'GWBMA';
    end if;

    if job_key is not null then
        -- Upsert job
        insert into jobs (
            task_identifier,
            payload,
            queue_name,
            run_at,
            max_attempts,
            key,
            priority
        )
            values(
                identifier,
                coalesce(payload, '{}'::json),
                queue_name,
                coalesce(run_at, now()),
                coalesce(max_attempts, 25),
                job_key,
                coalesce(priority, 0)
            )
            on conflict (key) do update set
                task_identifier=excluded.task_identifier,
                payload=excluded.payload,
                queue_name=excluded.queue_name,
                max_attempts=excluded.max_attempts,
                run_at=excluded.run_at,
                priority=excluded.priority,

                -- always reset error/retry state
                attempts=0,
                last_error=null
            where jobs.locked_at is null
            returning *
            into v_job;

        -- If upsert succeeded (insert or update), return early
        if not (v_job is null) then
            return v_job;
        end if;

        -- Upsert failed -> there must be an existing job that is locked. Remove
        -- existing key to allow a new one to be inserted, and prevent any
        -- subsequent retries by bumping attempts to the max allowed.
        update jobs
            set
                key = null,
                attempts = jobs.max_attempts
            where key = job_key;
    end if;

    -- insert the new job. Assume no conflicts due to the update above
    insert into jobs(
        task_identifier,
        payload,
        queue_name,
        run_at,
        max_attempts,
        key,
        priority
    )
        values(
            identifier,
            coalesce(payload, '{}'::json),
            queue_name,
            coalesce(run_at, now()),
            coalesce(max_attempts, 25),
            job_key,
            coalesce(priority, 0)
        )
        returning *
        into v_job;

    return v_job;
end;
$$ language plpgsql volatile;

create function complete_jobs(
    job_ids bigint[]
) returns setof jobs as $$
    delete from jobs
        where id = any(job_ids)
        and (
            locked_by is null
            or
            locked_at < NOW() - interval '4 hours'
        )
        returning *;
$$ language sql volatile;

create function permanently_fail_jobs(
    job_ids bigint[],
    error_message text = null
) returns setof jobs as $$
    update jobs
        set
            last_error = coalesce(error_message, 'Manually marked as failed'),
            attempts = max_attempts
        where id = any(job_ids)
        and (
            locked_by is null
            or
            locked_at < NOW() - interval '4 hours'
        )
        returning *;
$$ language sql volatile;

create function reschedule_jobs(
    job_ids bigint[],
    run_at timestamptz = null,
    priority int = null,
    attempts int = null,
    max_attempts int = null
) returns setof jobs as $$
    update jobs
        set
            run_at = coalesce(reschedule_jobs.run_at, jobs.run_at),
            priority = coalesce(reschedule_jobs.priority, jobs.priority),
            attempts = coalesce(reschedule_jobs.attempts, jobs.attempts),
            max_attempts = coalesce(reschedule_jobs.max_attempts, jobs.max_attempts)
        where id = any(job_ids)
        and (
            locked_by is null
            or
            locked_at < NOW() - interval '4 hours'
        )
        returning *;
$$ language sql volatile;

insert into migrations (id, breaking) values (4, false);

-- m000005
alter table jobs add column revision int default 0 not null;

alter table jobs add column flags jsonb default null;

drop function add_job(text, json, text, timestamptz, int, text, int);

create function add_job(
    identifier text,
    payload json = null,
    queue_name text = null,
    run_at timestamptz = null,
    max_attempts int = null,
    job_key text = null,
    priority int = null,
    flags text[] = null
) returns jobs as $$
declare
    v_job jobs;
begin
    -- Apply rationality checks
    if length(identifier) > 128 then
        raise exception 'Task identifier is too long (max length: 128).' using errcode = 'GWBID';
    end if;
    if queue_name is not null and length(queue_name) > 128 then
        raise exception 'Job queue name is too long (max length: 128).' using errcode = 'GWBQN';
    end if;
    if job_key is not null and length(job_key) > 512 then
        raise exception 'Job key is too long (max length: 512).' using errcode = 'GWBJK';
    end if;
    if max_attempts < 1 then
        raise exception 'Job maximum attempts must be at least 1' using errcode = 'GWBMA';
    end if;

    if job_key is not null then
        -- Upsert job
        insert into jobs (
            task_identifier,
            payload,
            queue_name,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
            values(
                identifier,
                coalesce(payload, '{}'::json),
                queue_name,
                coalesce(run_at, now()),
                coalesce(max_attempts, 25),
                job_key,
                coalesce(priority, 0),
                (
                  select jsonb_object_agg(flag, true)
                  from unnest(flags) as item(flag)
                )
            )
            on conflict (key) do update set
                task_identifier=excluded.task_identifier,
                payload=excluded.payload,
                queue_name=excluded.queue_name,
                max_attempts=excluded.max_attempts,
                run_at=excluded.run_at,
                priority=excluded.priority,
                revision=jobs.revision + 1,
                flags=excluded.flags,

                -- always reset error/retry state
                attempts=0,
                last_error=null
            where jobs.locked_at is null
            returning *
            into v_job;

        -- If upsert succeeded (insert or update), return early
        if not (v_job is null) then
            return v_job;
        end if;

        -- Upsert failed -> there must be an existing job that is locked. Remove
        -- existing key to allow a new one to be inserted, and prevent any
        -- subsequent retries by bumping attempts to the max allowed.
        update jobs
            set
                key = null,
                attempts = jobs.max_attempts
            where key = job_key;
    end if;

    -- insert the new job. Assume no conflicts due to the update above
    insert into jobs(
        task_identifier,
        payload,
        queue_name,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
    values(
        identifier,
        coalesce(payload, '{}'::json),
        queue_name,
        coalesce(run_at, now()),
        coalesce(max_attempts, 25),
        job_key,
        coalesce(priority, 0),
        (
            select jsonb_object_agg(flag, true)
            from unnest(flags) as item(flag)
        )
    )
    returning *
    into v_job;

    return v_job;
end;
$$ language plpgsql volatile;

drop function get_job(text, text[], interval);

create function get_job(
    worker_id text,
    task_identifiers text[] = null,
    job_expiry interval = interval '4 hours',
    forbidden_flags text[] = null
) returns jobs as $$
declare
    v_job_id bigint;
    v_queue_name text;
    v_row jobs;
    v_now timestamptz = now();
begin
    if worker_id is null or length(worker_id) < 10 then
        raise exception 'invalid worker id';
    end if;

    select jobs.queue_name, jobs.id into v_queue_name, v_job_id
        from jobs
        where (jobs.locked_at is null or jobs.locked_at < (v_now - job_expiry))
        and (
            jobs.queue_name is null
            or
            exists (
                select 1
                from job_queues
                where job_queues.queue_name = jobs.queue_name
                and (job_queues.locked_at is null or job_queues.locked_at < (v_now - job_expiry))
                for update
                skip locked
            )
        )
        and run_at <= v_now
        and attempts < max_attempts
        and (task_identifiers is null or task_identifier = any(task_identifiers))
        and (forbidden_flags is null or (flags ?| forbidden_flags) is not true)
        order by priority asc, run_at asc, id asc
        limit 1
        for update
        skip locked;

    if v_job_id is null then
        return null;
    end if;

    if v_queue_name is not null then
        update job_queues
        set
            locked_by = worker_id,
            locked_at = v_now
        where job_queues.queue_name = v_queue_name;
    end if;

    update jobs
        set
            attempts = attempts + 1,
            locked_by = worker_id,
            locked_at = v_now
        where id = v_job_id
        returning * into v_row;
    return v_row;
end;
$$ language plpgsql volatile;

insert into migrations (id, breaking) values (5, false);

-- m000006
create index jobs_priority_run_at_id_locked_at_without_failures_idx
    on jobs (priority, run_at, id, locked_at)
    where attempts < max_attempts;

drop index jobs_priority_run_at_id_idx;

insert into migrations (id, breaking) values (6, false);

-- m000007
drop function add_job(text, json, text, timestamptz, int, text, int, text[]);

create function add_job(
    identifier text,
    payload json = null,
    queue_name text = null,
    run_at timestamptz = null,
    max_attempts integer = null,
    job_key text = null,
    priority integer = null,
    flags text[] = null,
    job_key_mode text = 'replace'
) returns jobs as $$
declare
    v_job jobs;
begin
    -- Apply rationality checks
    if length(identifier) > 128 then
        raise exception 'Task identifier is too long (max length: 128).' using errcode = 'GWBID';
    end if;
    if queue_name is not null and length(queue_name) > 128 then
        raise exception 'Job queue name is too long (max length: 128).' using errcode = 'GWBQN';
    end if;
    if job_key is not null and length(job_key) > 512 then
        raise exception 'Job key is too long (max length: 512).' using errcode = 'GWBJK';
    end if;
    if max_attempts < 1 then
        raise exception 'Job maximum attempts must be at least 1.' using errcode = 'GWBMA';
    end if;
    if job_key is not null and (job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        -- Upsert job if existing job isn't locked, but in the case of locked
        -- existing job create a new job instead as it must have already started
        -- executing (i.e. it's world state is out of date, and the fact add_job
        -- has been called again implies there's new information that needs to be
        -- acted upon).
        insert into jobs (
            task_identifier,
            payload,
            queue_name,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
            values(
                identifier,
                coalesce(payload, '{}'::json),
                queue_name,
                coalesce(run_at, now()),
                coalesce(max_attempts, 25),
                job_key,
                coalesce(priority, 0),
                (
                    select jsonb_object_agg(flag, true)
                    from unnest(flags) as item(flag)
                )
            )
            on conflict (key) do update set
                task_identifier=excluded.task_identifier,
                payload=excluded.payload,
                queue_name=excluded.queue_name,
                max_attempts=excluded.max_attempts,
                run_at=(case
                    when job_key_mode = 'preserve_run_at' and jobs.attempts = 0 then jobs.run_at
                    else excluded.run_at
                end),
                priority=excluded.priority,
                revision=jobs.revision + 1,
                flags=excluded.flags,
                -- always reset error/retry state
                attempts=0,
                last_error=null
            where jobs.locked_at is null
            returning *
            into v_job;
        -- If upsert succeeded (insert or update), return early
        if not (v_job is null) then
            return v_job;
        end if;
        -- Upsert failed -> there must be an existing job that is locked. Remove
        -- existing key to allow a new one to be inserted, and prevent any
        -- subsequent retries of existing job by bumping attempts to the max
        -- allowed.
        update jobs
            set
                key = null,
                attempts = jobs.max_attempts
            where key = job_key;
    elsif job_key is not null and job_key_mode = 'unsafe_dedupe' then
        -- Insert job, but if one already exists then do nothing, even if the
        -- existing job has already started (and thus represents an out-of-date
        -- world state). This is dangerous because it means that whatever state
        -- change triggered this add_job may not be acted upon (since it happened
        -- after the existing job started executing, but no further job is being
        -- scheduled), but it is useful in very rare circumstances for
        -- de-duplication. If in doubt, DO NOT USE THIS.
        insert into jobs (
            task_identifier,
            payload,
            queue_name,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
            values(
                identifier,
                coalesce(payload, '{}'::json),
                queue_name,
                coalesce(run_at, now()),
                coalesce(max_attempts, 25),
                job_key,
                coalesce(priority, 0),
                (
                    select jsonb_object_agg(flag, true)
                    from unnest(flags) as item(flag)
                )
            )
            on conflict (key)
            -- Bump the revision so that there's something to return
            do update set revision = jobs.revision + 1
            returning *
            into v_job;
        return v_job;
    elsif job_key is not null then
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
    -- insert the new job. Assume no conflicts due to the update above
    insert into jobs(
        task_identifier,
        payload,
        queue_name,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        values(
            identifier,
            coalesce(payload, '{}'::json),
            queue_name,
            coalesce(run_at, now()),
            coalesce(max_attempts, 25),
            job_key,
            coalesce(priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(flags) as item(flag)
            )
        )
        returning *
        into v_job;
    return v_job;
end;
$$ language plpgsql volatile;

insert into migrations (id, breaking) values (7, false);

-- m000008
create table known_crontabs (
    identifier text not null primary key,
    known_since timestamptz not null,
    last_execution timestamptz
);

alter table known_crontabs enable row level security;

insert into migrations (id, breaking) values (8, false);

-- m000009
drop function get_job(text, text[], interval, text[]);

create function get_job(
    worker_id text,
    task_identifiers text[] = null,
    job_expiry interval = interval '4 hours',
    forbidden_flags text[] = null,
    now timestamptz = now()
) returns jobs as $$
declare
    v_job_id bigint;
    v_queue_name text;
    v_row jobs;
begin
    if worker_id is null or length(worker_id) < 10 then
        raise exception 'invalid worker id';
    end if;

    select jobs.queue_name, jobs.id into v_queue_name, v_job_id
        from jobs
        where (jobs.locked_at is null or jobs.locked_at < (now - job_expiry))
        and (
            jobs.queue_name is null
        or
            exists (
                select 1
                from job_queues
                where job_queues.queue_name = jobs.queue_name
                and (job_queues.locked_at is null or job_queues.locked_at < (now - job_expiry))
                for update
                skip locked
            )
        )
        and run_at <= now
        and attempts < max_attempts
        and (task_identifiers is null or task_identifier = any(task_identifiers))
        and (forbidden_flags is null or (flags ?| forbidden_flags) is not true)
        order by priority asc, run_at asc, id asc
        limit 1
        for update
        skip locked;

    if v_job_id is null then
        return null;
    end if;

    if v_queue_name is not null then
        update job_queues
            set
                locked_by = worker_id,
                locked_at = now
            where job_queues.queue_name = v_queue_name;
    end if;

    update jobs
        set
            attempts = attempts + 1,
            locked_by = worker_id,
            locked_at = now
        where id = v_job_id
        returning * into v_row;

    return v_row;
end;
$$ language plpgsql volatile;

insert into migrations (id, breaking) values (9, false);

-- m000010
alter table jobs alter column queue_name drop default;

insert into migrations (id, breaking) values (10, false);

-- m000011
lock table jobs;

lock table job_queues;

select 1/(case when exists (
    select 1
    from jobs
    where locked_at is not null
    and locked_at > NOW() - interval '4 hours'
) then 0 else 1 end);

alter table jobs
alter column attempts type int2,
alter column max_attempts type int2,
alter column priority type int2;

drop function complete_job;

drop function fail_job;

drop function get_job;

drop trigger _900_notify_worker on jobs;

drop function add_job;

drop function complete_jobs;

drop function permanently_fail_jobs;

drop function remove_job;

drop function reschedule_jobs;

drop function tg_jobs__notify_new_jobs;

alter table jobs rename to jobs_legacy;

alter table job_queues rename to job_queues_legacy;

create table job_queues (
    id int primary key generated always as identity,
    queue_name text not null unique check (length(queue_name) <= 128),
    locked_at timestamptz,
    locked_by text,
    is_available boolean generated always as ((locked_at is null)) stored not null
);

alter table job_queues enable row level security;

create table tasks (
    id int primary key generated always as identity,
    identifier text not null unique check (length(identifier) <= 128)
);

alter table tasks enable row level security;

create table jobs (
    id bigint primary key generated always as identity,
    job_queue_id int null, -- not adding 'references' to eke out more performance
    task_id int not null,
    payload json default '{}'::json not null,
    priority smallint default 0 not null,
    run_at timestamptz default now() not null,
    attempts smallint default 0 not null,
    max_attempts smallint default 25 not null constraint jobs_max_attempts_check check (max_attempts >= 1),
    last_error text,
    created_at timestamptz default now() not null,
    updated_at timestamptz default now() not null,
    key text unique constraint jobs_key_check check (length(key) > 0 and length(key) <= 512),
    locked_at timestamptz,
    locked_by text,
    revision integer default 0 not null,
    flags jsonb,
    is_available boolean generated always as (((locked_at is null) and (attempts < max_attempts))) stored not null
);

alter table jobs enable row level security;

create index jobs_main_index
    on jobs
    using btree (priority, run_at)
    include (id, task_id, job_queue_id)
    where (is_available = true);

create index jobs_no_queue_index
    on jobs
    using btree (priority, run_at)
    include (id, task_id)
    where (is_available = true and job_queue_id is null);

create type job_spec as (
    identifier text,
    payload json,
    queue_name text,
    run_at timestamptz,
    max_attempts integer,
    job_key text,
    priority integer,
    flags text[]
);

create function add_jobs(
    specs job_spec[],
    job_key_preserve_run_at boolean default false
)
returns setof jobs
as $$
begin
    -- Ensure all the tasks exist
    insert into tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    on conflict do nothing;

    -- Ensure all the queues exist
    insert into job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    on conflict do nothing;

    -- Ensure any locked jobs have their key cleared - in the case of locked
    -- existing job create a new job instead as it must have already started
    -- executing (i.e. it's world state is out of date, and the fact add_job
    -- has been called again implies there's new information that needs to be
    -- acted upon).
    update jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    from unnest(specs) spec
    where spec.job_key is not null
    and jobs.key = spec.job_key
    and is_available is not true;

    -- The unique key index is the final arbiter for concurrent callers:
    -- once unavailable matching jobs have their key cleared, competing
    -- inserts for the same key are resolved by the ON CONFLICT update below.

    return query insert into jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
        from unnest(specs) spec
        inner join tasks
        on tasks.identifier = spec.identifier
        left join job_queues
        on job_queues.queue_name = spec.queue_name
    on conflict (key) do update set
        job_queue_id = excluded.job_queue_id,
        task_id = excluded.task_id,
        payload = excluded.payload,
        max_attempts = excluded.max_attempts,
        run_at = (case
            when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
            else excluded.run_at
        end),
        priority = excluded.priority,
        revision = jobs.revision + 1,
        flags = excluded.flags,
        -- always reset error/retry state
        attempts = 0,
        last_error = null,
        updated_at = now()
    where jobs.locked_at is null
    returning *;
end;
$$ language plpgsql;

create function complete_jobs(job_ids bigint[])
returns setof jobs
as $$
    delete from jobs
        where id = any(job_ids)
        and (
            locked_at is null
            or
            locked_at < now() - interval '4 hours'
        )
    returning *;
$$ language sql;

create function remove_job(job_key text)
returns jobs
as $$
declare
    v_job jobs;
begin
    -- Delete job if not locked
    delete from jobs
        where key = job_key
        and (
            locked_at is null
            or
            locked_at < NOW() - interval '4 hours'
        )
        returning * into v_job;
    if not (v_job is null) then
        return v_job;
    end if;
    -- Otherwise prevent job from retrying, and clear the key
    update jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    where key = job_key
    returning * into v_job;
    return v_job;
end;
$$ language plpgsql strict;

create function reschedule_jobs(
    job_ids bigint[],
    run_at timestamp with time zone default null::timestamp with time zone,
    priority integer default null::integer,
    attempts integer default null::integer,
    max_attempts integer default null::integer
) returns setof jobs
as $$
    update jobs
        set
            run_at = coalesce(reschedule_jobs.run_at, jobs.run_at),
            priority = coalesce(reschedule_jobs.priority, jobs.priority),
            attempts = coalesce(reschedule_jobs.attempts, jobs.attempts),
            max_attempts = coalesce(reschedule_jobs.max_attempts, jobs.max_attempts),
            updated_at = now()
        where id = any(job_ids)
        and (
            locked_at is null
            or
            locked_at < NOW() - interval '4 hours'
        )
        returning *;
$$ language sql;

create function tg_jobs__after_insert() returns trigger
as $$
begin
    perform pg_notify('jobs:insert', '');
    return new;
end;
$$ language plpgsql;

create trigger _900_after_insert
after insert on jobs
for each statement
execute procedure tg_jobs__after_insert();

create function add_job(
    identifier text,
    payload json default null::json,
    queue_name text default null::text,
    run_at timestamp with time zone default null::timestamp with time zone,
    max_attempts integer default null::integer,
    job_key text default null::text,
    priority integer default null::integer,
    flags text[] default null::text[],
    job_key_mode text default 'replace'::text
) returns jobs as $$
declare
    v_job jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts,
                job_key,
                priority,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;
        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        -- Ensure all the tasks exist
        insert into tasks (identifier)
        values (add_job.identifier)
        on conflict do nothing;

        -- Ensure all the queues exist
        if add_job.queue_name is not null then
            insert into job_queues (queue_name)
            values (add_job.queue_name)
            on conflict do nothing;
        end if;

        -- Insert job, but if one already exists then do nothing, even if the
        -- existing job has already started (and thus represents an out-of-date
        -- world state). This is dangerous because it means that whatever state
        -- change triggered this add_job may not be acted upon (since it happened
        -- after the existing job started executing, but no further job is being
        -- scheduled), but it is useful in very rare circumstances for
        -- de-duplication. If in doubt, DO NOT USE THIS.
        insert into jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
            select
                job_queues.id,
                tasks.id,
                coalesce(add_job.payload, '{}'::json),
                coalesce(add_job.run_at, now()),
                coalesce(add_job.max_attempts, 25),
                add_job.job_key,
                coalesce(add_job.priority, 0),
                (
                    select jsonb_object_agg(flag, true)
                    from unnest(add_job.flags) as item(flag)
                )
            from tasks
            left join job_queues
            on job_queues.queue_name = add_job.queue_name
            where tasks.identifier = add_job.identifier
        on conflict (key)
            -- Bump the updated_at so that there's something to return
            do update set
                revision = jobs.revision + 1,
                updated_at = now()
            returning *
            into v_job;
        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$ language plpgsql;

insert into job_queues (queue_name)
select distinct queue_name
from jobs_legacy
where queue_name is not null
on conflict do nothing;

insert into tasks (identifier)
select distinct task_identifier
from jobs_legacy
on conflict do nothing;

insert into jobs (
    job_queue_id,
    task_id,
    payload,
    priority,
    run_at,
    attempts,
    max_attempts,
    last_error,
    created_at,
    updated_at,
    key,
    revision,
    flags
)
    select
        job_queues.id,
        tasks.id,
        legacy.payload,
        legacy.priority,
        legacy.run_at,
        legacy.attempts,
        legacy.max_attempts,
        legacy.last_error,
        legacy.created_at,
        legacy.updated_at,
        legacy.key,
        legacy.revision,
        legacy.flags
    from jobs_legacy legacy
    inner join tasks
    on tasks.identifier = legacy.task_identifier
    left join job_queues
    on job_queues.queue_name = legacy.queue_name;

drop table jobs_legacy;

drop table job_queues_legacy;

insert into migrations (id, breaking) values (11, true);

-- m000012
create or replace function add_jobs(
    specs job_spec[],
    job_key_preserve_run_at boolean default false
)
returns setof jobs
as $$
begin
    -- Ensure all the tasks exist
    insert into tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    on conflict do nothing;

    -- Ensure all the queues exist
    insert into job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    on conflict do nothing;

    -- Ensure any locked jobs have their key cleared - in the case of locked
    -- existing job create a new job instead as it must have already started
    -- executing (i.e. it's world state is out of date, and the fact add_job
    -- has been called again implies there's new information that needs to be
    -- acted upon).
    update jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    from unnest(specs) spec
    where spec.job_key is not null
    and jobs.key = spec.job_key
    and is_available is not true;

    -- The unique key index is the final arbiter for concurrent callers:
    -- once unavailable matching jobs have their key cleared, competing
    -- inserts for the same key are resolved by the ON CONFLICT update below.

    return query insert into jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
            from unnest(specs) spec
            inner join tasks
            on tasks.identifier = spec.identifier
            left join job_queues
            on job_queues.queue_name = spec.queue_name
        on conflict (key) do update set
            job_queue_id = excluded.job_queue_id,
            task_id = excluded.task_id,
            payload =
                case
                when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
                    (jobs.payload::jsonb || excluded.payload::jsonb)::json
                else
                    excluded.payload
                end,
            max_attempts = excluded.max_attempts,
            run_at = (case
              when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
              else excluded.run_at
            end),
            priority = excluded.priority,
            revision = jobs.revision + 1,
            flags = excluded.flags,
            -- always reset error/retry state
            attempts = 0,
            last_error = null,
            updated_at = now()
        where jobs.locked_at is null
        returning *;
end;
$$ language plpgsql;

insert into migrations (id, breaking) values (12, false);

-- m000013
alter type job_spec alter attribute max_attempts type smallint;

alter type job_spec alter attribute priority type smallint;

drop function add_job;

CREATE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts smallint DEFAULT NULL::smallint, job_key text DEFAULT NULL::text, priority smallint DEFAULT NULL::smallint, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS jobs
    LANGUAGE plpgsql
    AS $$
declare
    v_job jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts,
                job_key,
                priority,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;
        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        -- Ensure all the tasks exist
        insert into tasks (identifier)
        values (add_job.identifier)
        on conflict do nothing;
        -- Ensure all the queues exist
        if add_job.queue_name is not null then
          insert into job_queues (queue_name)
          values (add_job.queue_name)
          on conflict do nothing;
        end if;
        -- Insert job, but if one already exists then do nothing, even if the
        -- existing job has already started (and thus represents an out-of-date
        -- world state). This is dangerous because it means that whatever state
        -- change triggered this add_job may not be acted upon (since it happened
        -- after the existing job started executing, but no further job is being
        -- scheduled), but it is useful in very rare circumstances for
        -- de-duplication. If in doubt, DO NOT USE THIS.
        insert into jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
            select
                job_queues.id,
                tasks.id,
                coalesce(add_job.payload, '{}'::json),
                coalesce(add_job.run_at, now()),
                coalesce(add_job.max_attempts, 25),
                add_job.job_key,
                coalesce(add_job.priority, 0),
                (
                    select jsonb_object_agg(flag, true)
                    from unnest(add_job.flags) as item(flag)
                )
            from tasks
            left join job_queues
            on job_queues.queue_name = add_job.queue_name
            where tasks.identifier = add_job.identifier
        on conflict (key)
            -- Bump the updated_at so that there's something to return
            do update set
                revision = jobs.revision + 1,
                updated_at = now()
            returning *
            into v_job;
        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$;

insert into migrations (id, breaking) values (13, true);

-- m000014
DROP FUNCTION add_job;

CREATE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts int DEFAULT NULL::int, job_key text DEFAULT NULL::text, priority int DEFAULT NULL::int, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS jobs
LANGUAGE plpgsql
AS $$
declare
    v_job jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts::smallint,
                job_key,
                priority::smallint,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;
        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        insert into tasks (identifier)
        values (identifier)
        on conflict do nothing;
        if queue_name is not null then
            insert into job_queues (queue_name)
            values (queue_name)
            on conflict do nothing;
        end if;
        insert into jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
        select
            job_queues.id,
            tasks.id,
            coalesce(payload, '{}'::json),
            coalesce(run_at, now()),
            coalesce(max_attempts::smallint, 25::smallint),
            job_key,
            coalesce(priority::smallint, 0::smallint),
            (
                select jsonb_object_agg(flag, true)
                from unnest(flags) as item(flag)
            )
        from tasks
        left join job_queues
        on job_queues.queue_name = queue_name
        where tasks.identifier = identifier
        on conflict (key)
        do update set
            revision = jobs.revision + 1,
            updated_at = now()
        returning *
        into v_job;
        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$;

DROP FUNCTION reschedule_jobs;

CREATE FUNCTION reschedule_jobs(job_ids bigint[], run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, priority int DEFAULT NULL::int, attempts int DEFAULT NULL::int, max_attempts int DEFAULT NULL::int) RETURNS SETOF jobs
LANGUAGE sql
AS $$
    UPDATE jobs
    SET
        run_at = coalesce(run_at, jobs.run_at),
        priority = coalesce(priority::smallint, jobs.priority),
        attempts = coalesce(attempts::smallint, jobs.attempts),
        max_attempts = coalesce(max_attempts::smallint, jobs.max_attempts),
        updated_at = now()
    WHERE id = ANY(job_ids)
    AND (
        locked_at is null
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING *;
$$;

insert into migrations (id, breaking) values (14, true);

-- m000015
DROP FUNCTION jobs__increase_job_queue_count();

DROP FUNCTION jobs__decrease_job_queue_count();

DROP FUNCTION tg__update_timestamp();

CREATE FUNCTION force_unlock_workers(worker_ids text[]) RETURNS void AS $$
UPDATE jobs
SET locked_at = null, locked_by = null
WHERE locked_by = ANY(worker_ids);
UPDATE job_queues
SET locked_at = null, locked_by = null
WHERE locked_by = ANY(worker_ids);
$$ LANGUAGE sql VOLATILE;

insert into migrations (id, breaking) values (15, false);

-- m000016
ALTER TABLE jobs RENAME TO _private_jobs;

ALTER TABLE job_queues RENAME TO _private_job_queues;

ALTER TABLE tasks RENAME TO _private_tasks;

ALTER TABLE known_crontabs RENAME TO _private_known_crontabs;

DROP FUNCTION add_job;

CREATE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, job_key text DEFAULT NULL::text, priority integer DEFAULT NULL::integer, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS _private_jobs
LANGUAGE plpgsql
AS $$
declare
    v_job _private_jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts::smallint,
                job_key,
                priority::smallint,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;
        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        -- Ensure all the tasks exist
        insert into _private_tasks as tasks (identifier)
        values (identifier)
        on conflict do nothing;
        -- Ensure all the queues exist
        if queue_name is not null then
            insert into _private_job_queues as job_queues (queue_name)
            values (queue_name)
            on conflict do nothing;
        end if;
        -- Insert job, but if one already exists then do nothing
        insert into _private_jobs as jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
        select
            job_queues.id,
            tasks.id,
            coalesce(payload, '{}'::json),
            coalesce(run_at, now()),
            coalesce(max_attempts::smallint, 25::smallint),
            job_key,
            coalesce(priority::smallint, 0::smallint),
            (
                select jsonb_object_agg(flag, true)
                from unnest(flags) as item(flag)
            )
        from _private_tasks as tasks
        left join _private_job_queues as job_queues
        on job_queues.queue_name = queue_name
        where tasks.identifier = identifier
        on conflict (key)
        do update set
            revision = jobs.revision + 1,
            updated_at = now()
        returning *
        into v_job;
        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$;

DROP FUNCTION add_jobs;

CREATE FUNCTION add_jobs(specs job_spec[], job_key_preserve_run_at boolean DEFAULT false) RETURNS SETOF _private_jobs
LANGUAGE plpgsql
AS $$
begin
    -- Ensure all the tasks exist
    insert into _private_tasks as tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    on conflict do nothing;
    -- Ensure all the queues exist
    insert into _private_job_queues as job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    on conflict do nothing;
    -- Ensure any locked jobs have their key cleared - in the case of locked
    -- existing job create a new job instead as it must have already started
    -- executing (i.e., it's world state is out of date, and the fact add_job
    -- has been called again implies there's new information that needs to be
    -- acted upon).
    update _private_jobs as jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    from unnest(specs) spec
    where spec.job_key is not null
    and jobs.key = spec.job_key
    and is_available is not true;
    -- The unique key index is the final arbiter for concurrent callers:
    -- once unavailable matching jobs have their key cleared, competing
    -- inserts for the same key are resolved by the ON CONFLICT update below.
    return query insert into _private_jobs as jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
        from unnest(specs) spec
        inner join _private_tasks as tasks
        on tasks.identifier = spec.identifier
        left join _private_job_queues as job_queues
        on job_queues.queue_name = spec.queue_name
    on conflict (key) do update set
        job_queue_id = excluded.job_queue_id,
        task_id = excluded.task_id,
        payload =
            case
            when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
                (jobs.payload::jsonb || excluded.payload::jsonb)::json
            else
                excluded.payload
            end,
        max_attempts = excluded.max_attempts,
        run_at = (case
            when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
            else excluded.run_at
        end),
        priority = excluded.priority,
        revision = jobs.revision + 1,
        flags = excluded.flags,
        -- always reset error/retry state
        attempts = 0,
        last_error = null,
        updated_at = now()
    where jobs.locked_at is null
    returning *;
end;
$$;

DROP FUNCTION complete_jobs;

CREATE FUNCTION complete_jobs(job_ids bigint[]) RETURNS SETOF _private_jobs
    LANGUAGE sql
    AS $$
    delete from _private_jobs as jobs
        where id = any(job_ids)
        and (
            locked_at is null
        or
            locked_at < now() - interval '4 hours'
        )
        returning *;
$$;

DROP FUNCTION force_unlock_workers;

CREATE FUNCTION force_unlock_workers(worker_ids text[]) RETURNS void
    LANGUAGE sql
    AS $$
        update _private_jobs as jobs
        set locked_at = null, locked_by = null
        where locked_by = any(worker_ids);
        update _private_job_queues as job_queues
        set locked_at = null, locked_by = null
        where locked_by = any(worker_ids);
$$;

DROP FUNCTION IF EXISTS permanently_fail_jobs;

CREATE FUNCTION permanently_fail_jobs(job_ids bigint[], error_message text DEFAULT NULL::text) RETURNS SETOF _private_jobs
LANGUAGE sql
AS $$
    UPDATE _private_jobs AS jobs
    SET
        last_error = COALESCE(error_message, 'Manually marked as failed'),
        attempts = max_attempts,
        updated_at = now()
    WHERE id = ANY(job_ids)
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING *;
$$;

DROP FUNCTION remove_job;

CREATE FUNCTION remove_job(job_key text) RETURNS _private_jobs
LANGUAGE plpgsql STRICT
AS $$
declare
    v_job _private_jobs;
begin
    -- Delete job if not locked
    DELETE FROM _private_jobs AS jobs
    WHERE key = job_key
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING * INTO v_job;
    IF NOT (v_job IS NULL) THEN
        RETURN v_job;
    END IF;
    -- Otherwise prevent job from retrying, and clear the key
    UPDATE _private_jobs AS jobs
    SET
        key = NULL,
        attempts = jobs.max_attempts,
        updated_at = now()
    WHERE key = job_key
    RETURNING * INTO v_job;
    RETURN v_job;
end;
$$;

DROP FUNCTION reschedule_jobs;

CREATE FUNCTION reschedule_jobs(job_ids bigint[], run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer DEFAULT NULL::integer, attempts integer DEFAULT NULL::integer, max_attempts integer DEFAULT NULL::integer) RETURNS SETOF _private_jobs
LANGUAGE sql
AS $$
    UPDATE _private_jobs AS jobs
    SET
        run_at = COALESCE(reschedule_jobs.run_at, jobs.run_at),
        priority = COALESCE(reschedule_jobs.priority::smallint, jobs.priority),
        attempts = COALESCE(reschedule_jobs.attempts::smallint, jobs.attempts),
        max_attempts = COALESCE(reschedule_jobs.max_attempts::smallint, jobs.max_attempts),
        updated_at = now()
    WHERE id = ANY(job_ids)
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING *;
$$;

insert into migrations (id, breaking) values (16, true);

-- m000017
CREATE VIEW jobs AS (
    SELECT
        jobs.id,
        job_queues.queue_name,
        tasks.identifier AS task_identifier,
        jobs.priority,
        jobs.run_at,
        jobs.attempts,
        jobs.max_attempts,
        jobs.last_error,
        jobs.created_at,
        jobs.updated_at,
        jobs.key,
        jobs.locked_at,
        jobs.locked_by,
        jobs.revision,
        jobs.flags
    FROM _private_jobs AS jobs
    INNER JOIN _private_tasks AS tasks
    ON tasks.id = jobs.task_id
    LEFT JOIN _private_job_queues AS job_queues
    ON job_queues.id = jobs.job_queue_id
);

insert into migrations (id, breaking) values (17, false);

-- m000018
DROP TRIGGER _900_after_insert ON _private_jobs;

DROP FUNCTION tg_jobs__after_insert;

CREATE OR REPLACE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, job_key text DEFAULT NULL::text, priority integer DEFAULT NULL::integer, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS _private_jobs
LANGUAGE plpgsql
AS $$
declare
    v_job _private_jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts::smallint,
                job_key,
                priority::smallint,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;
        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        -- Ensure all the tasks exist
        insert into _private_tasks as tasks (identifier)
        values (identifier)
        on conflict do nothing;
        -- Ensure all the queues exist
        if queue_name is not null then
            insert into _private_job_queues as job_queues (queue_name)
            values (queue_name)
            on conflict do nothing;
        end if;
        -- Insert job, but if one already exists then do nothing
        insert into _private_jobs as jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
        select
            job_queues.id,
            tasks.id,
            coalesce(payload, '{}'::json),
            coalesce(run_at, now()),
            coalesce(max_attempts::smallint, 25::smallint),
            job_key,
            coalesce(priority::smallint, 0::smallint),
            (
                select jsonb_object_agg(flag, true)
                from unnest(flags) as item(flag)
            )
        from _private_tasks as tasks
        left join _private_job_queues as job_queues
        on job_queues.queue_name = add_job.queue_name
        where tasks.identifier = add_job.identifier
        on conflict (key)
        do update set
            revision = jobs.revision + 1,
            updated_at = now()
        returning *
        into v_job;
        if v_job.revision = 0 then
            perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}');
        end if;
        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$;

CREATE OR REPLACE FUNCTION add_jobs(specs job_spec[], job_key_preserve_run_at boolean DEFAULT false) RETURNS SETOF _private_jobs
LANGUAGE plpgsql
AS $$
begin
    -- Ensure all the tasks exist
    insert into _private_tasks as tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    on conflict do nothing;
    -- Ensure all the queues exist
    insert into _private_job_queues as job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    on conflict do nothing;
    -- Ensure any locked jobs have their key cleared - in the case of locked
    -- existing job create a new job instead as it must have already started
    -- executing (i.e., it's world state is out of date, and the fact add_job
    -- has been called again implies there's new information that needs to be
    -- acted upon).
    update _private_jobs as jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    from unnest(specs) spec
    where spec.job_key is not null
    and jobs.key = spec.job_key
    and is_available is not true;

    -- WARNING: this count is not 100% accurate; 'on conflict' clause will cause it to be an overestimate
    perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || array_length(specs, 1)::text || '}');

    -- The unique key index is the final arbiter for concurrent callers:
    -- once unavailable matching jobs have their key cleared, competing
    -- inserts for the same key are resolved by the ON CONFLICT update below.
    return query insert into _private_jobs as jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
        from unnest(specs) spec
        inner join _private_tasks as tasks
        on tasks.identifier = spec.identifier
        left join _private_job_queues as job_queues
        on job_queues.queue_name = spec.queue_name
    on conflict (key) do update set
        job_queue_id = excluded.job_queue_id,
        task_id = excluded.task_id,
        payload =
            case
            when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
                (jobs.payload::jsonb || excluded.payload::jsonb)::json
            else
                excluded.payload
            end,
        max_attempts = excluded.max_attempts,
        run_at = (case
            when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
            else excluded.run_at
        end),
        priority = excluded.priority,
        revision = jobs.revision + 1,
        flags = excluded.flags,
        -- always reset error/retry state
        attempts = 0,
        last_error = null,
        updated_at = now()
    where jobs.locked_at is null
    returning *;
end;
$$;

CREATE OR REPLACE FUNCTION remove_job(job_key text) RETURNS _private_jobs
LANGUAGE plpgsql STRICT
AS $$
declare
    v_job _private_jobs;
begin
    -- Delete job if not locked
    DELETE FROM _private_jobs AS jobs
    WHERE key = job_key
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING * INTO v_job;
    IF NOT (v_job IS NULL) THEN
        perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":-1}');
        RETURN v_job;
    END IF;
    -- Otherwise prevent job from retrying, and clear the key
    UPDATE _private_jobs AS jobs
    SET
        key = NULL,
        attempts = jobs.max_attempts,
        updated_at = now()
    WHERE key = job_key
    RETURNING * INTO v_job;
    RETURN v_job;
end;
$$;

insert into migrations (id, breaking) values (18, false);

-- m000019
CREATE OR REPLACE FUNCTION add_jobs(specs job_spec[], job_key_preserve_run_at boolean DEFAULT false) RETURNS SETOF _private_jobs
LANGUAGE plpgsql
AS $$
declare
    locked_key text;
begin
    for locked_key in
        select distinct spec.job_key
        from unnest(specs) spec
        where spec.job_key is not null
        order by spec.job_key
    loop
        perform pg_advisory_xact_lock(hashtext(locked_key));
    end loop;

    perform 1
    from _private_jobs as jobs
    where jobs.key = any(
        array(
            select distinct spec.job_key
            from unnest(specs) spec
            where spec.job_key is not null
        )
    )
    for update;

    insert into _private_tasks as tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    on conflict do nothing;

    insert into _private_job_queues as job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    on conflict do nothing;

    update _private_jobs as jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    from unnest(specs) spec
    where spec.job_key is not null
    and jobs.key = spec.job_key
    and is_available is not true;

    perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || array_length(specs, 1)::text || '}');

    return query insert into _private_jobs as jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
        from unnest(specs) spec
        inner join _private_tasks as tasks
        on tasks.identifier = spec.identifier
        left join _private_job_queues as job_queues
        on job_queues.queue_name = spec.queue_name
    on conflict (key) do update set
        job_queue_id = excluded.job_queue_id,
        task_id = excluded.task_id,
        payload =
            case
            when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
                (jobs.payload::jsonb || excluded.payload::jsonb)::json
            else
                excluded.payload
            end,
        max_attempts = excluded.max_attempts,
        run_at = (case
            when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
            else excluded.run_at
        end),
        priority = excluded.priority,
        revision = jobs.revision + 1,
        flags = excluded.flags,
        attempts = 0,
        last_error = null,
        updated_at = now()
    where jobs.locked_at is null
    returning *;
end;
$$;

CREATE OR REPLACE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, job_key text DEFAULT NULL::text, priority integer DEFAULT NULL::integer, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS _private_jobs
LANGUAGE plpgsql
AS $$
declare
    v_job _private_jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts::smallint,
                job_key,
                priority::smallint,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;

        if v_job.id is null then
            raise exception 'Unable to schedule job for key "%"', coalesce(job_key, '<null>') using errcode = 'GWNOR';
        end if;

        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        insert into _private_tasks as tasks (identifier)
        values (identifier)
        on conflict do nothing;

        if queue_name is not null then
            insert into _private_job_queues as job_queues (queue_name)
            values (queue_name)
            on conflict do nothing;
        end if;

        insert into _private_jobs as jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
        select
            job_queues.id,
            tasks.id,
            coalesce(payload, '{}'::json),
            coalesce(run_at, now()),
            coalesce(max_attempts::smallint, 25::smallint),
            job_key,
            coalesce(priority::smallint, 0::smallint),
            (
                select jsonb_object_agg(flag, true)
                from unnest(flags) as item(flag)
            )
        from _private_tasks as tasks
        left join _private_job_queues as job_queues
        on job_queues.queue_name = add_job.queue_name
        where tasks.identifier = add_job.identifier
        on conflict (key)
        do update set
            revision = jobs.revision + 1,
            updated_at = now()
        returning *
        into v_job;

        if v_job.revision = 0 then
            perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}');
        end if;

        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$;

insert into migrations (id, breaking) values (19, false);

-- m000020
CREATE TABLE _private_workers (
    id text PRIMARY KEY,
    last_heartbeat_at timestamptz NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    metadata jsonb
);

CREATE INDEX _private_workers_last_heartbeat_at_idx
    ON _private_workers (last_heartbeat_at);

CREATE FUNCTION worker_heartbeat(
    worker_id text,
    metadata json DEFAULT NULL::json
) RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO _private_workers AS workers (id, last_heartbeat_at, metadata)
    VALUES (worker_heartbeat.worker_id, now(), metadata::jsonb)
    ON CONFLICT (id) DO UPDATE
    SET
        last_heartbeat_at = now(),
        metadata = COALESCE(EXCLUDED.metadata, workers.metadata);
$$;

CREATE FUNCTION worker_deregister(worker_id text) RETURNS void
LANGUAGE sql
AS $$
    DELETE FROM _private_workers
    WHERE id = worker_deregister.worker_id;
$$;

CREATE FUNCTION list_stale_workers(
    stale_threshold interval
) RETURNS TABLE(worker_id text)
LANGUAGE sql
AS $$
    SELECT workers.id AS worker_id
    FROM _private_workers AS workers
    WHERE workers.last_heartbeat_at < now() - stale_threshold;
$$;

CREATE FUNCTION list_orphan_locked_workers(
    stale_threshold interval
) RETURNS TABLE(worker_id text)
LANGUAGE sql
AS $$
    SELECT DISTINCT locks.locked_by AS worker_id
    FROM (
        SELECT jobs.locked_by, jobs.locked_at
        FROM _private_jobs AS jobs
        WHERE jobs.locked_by IS NOT NULL
        UNION ALL
        SELECT job_queues.locked_by, job_queues.locked_at
        FROM _private_job_queues AS job_queues
        WHERE job_queues.locked_by IS NOT NULL
    ) AS locks
    WHERE locks.locked_at < now() - stale_threshold
    AND NOT EXISTS (
        SELECT 1
        FROM _private_workers AS workers
        WHERE workers.id = locks.locked_by
    );
$$;

CREATE FUNCTION recover_dead_worker_jobs(
    worker_ids text[],
    recovery_delay interval DEFAULT interval '0 seconds'
) RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    recovered_count integer := 0;
BEGIN
    WITH j AS (
        UPDATE _private_jobs AS jobs
        SET
            attempts = GREATEST(0, jobs.attempts - 1),
            locked_by = NULL,
            locked_at = NULL,
            run_at = GREATEST(jobs.run_at, now() + recovery_delay),
            last_error = 'Job recovered after worker interruption',
            updated_at = now()
        WHERE jobs.locked_by = ANY(worker_ids)
        RETURNING jobs.job_queue_id
    )
    SELECT COUNT(*) INTO recovered_count FROM j;

    UPDATE _private_job_queues AS job_queues
    SET locked_by = NULL, locked_at = NULL
    WHERE job_queues.locked_by = ANY(worker_ids);

    RETURN recovered_count;
END;
$$;

CREATE FUNCTION delete_stale_workers(
    worker_ids text[]
) RETURNS void
LANGUAGE sql
AS $$
    DELETE FROM _private_workers AS workers
    WHERE workers.id = ANY(worker_ids);
$$;

insert into migrations (id, breaking) values (20, false);

-- m000021
-- Port graphile/worker#623 while preserving Rust migration 19 key locking.
CREATE OR REPLACE FUNCTION add_jobs(specs job_spec[], job_key_preserve_run_at boolean DEFAULT false) RETURNS SETOF _private_jobs
LANGUAGE plpgsql
AS $$
declare
    locked_key text;
begin
    for locked_key in
        select distinct spec.job_key
        from unnest(specs) spec
        where spec.job_key is not null
        order by spec.job_key
    loop
        perform pg_advisory_xact_lock(hashtext(locked_key));
    end loop;

    perform 1
    from _private_jobs as jobs
    where jobs.key = any(
        array(
            select distinct spec.job_key
            from unnest(specs) spec
            where spec.job_key is not null
        )
    )
    for update;

    insert into _private_tasks as tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    where not exists (
        select 1 from _private_tasks as existing
        where existing.identifier = spec.identifier
    )
    on conflict do nothing;

    insert into _private_job_queues as job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    and not exists (
        select 1 from _private_job_queues as existing
        where existing.queue_name = spec.queue_name
    )
    on conflict do nothing;

    update _private_jobs as jobs
    set
        key = null,
        attempts = jobs.max_attempts,
        updated_at = now()
    from unnest(specs) spec
    where spec.job_key is not null
    and jobs.key = spec.job_key
    and is_available is not true;

    perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || array_length(specs, 1)::text || '}');

    return query insert into _private_jobs as jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
        from unnest(specs) spec
        inner join _private_tasks as tasks
        on tasks.identifier = spec.identifier
        left join _private_job_queues as job_queues
        on job_queues.queue_name = spec.queue_name
    on conflict (key) do update set
        job_queue_id = excluded.job_queue_id,
        task_id = excluded.task_id,
        payload =
            case
            when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
                (jobs.payload::jsonb || excluded.payload::jsonb)::json
            else
                excluded.payload
            end,
        max_attempts = excluded.max_attempts,
        run_at = (case
            when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
            else excluded.run_at
        end),
        priority = excluded.priority,
        revision = jobs.revision + 1,
        flags = excluded.flags,
        attempts = 0,
        last_error = null,
        updated_at = now()
    where jobs.locked_at is null
    returning *;
end;
$$;

CREATE OR REPLACE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, job_key text DEFAULT NULL::text, priority integer DEFAULT NULL::integer, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS _private_jobs
LANGUAGE plpgsql
AS $$
declare
    v_job _private_jobs;
begin
    if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
        select * into v_job
        from add_jobs(
            ARRAY[(
                identifier,
                payload,
                queue_name,
                run_at,
                max_attempts::smallint,
                job_key,
                priority::smallint,
                flags
            )::job_spec],
            (job_key_mode = 'preserve_run_at')
        )
        limit 1;

        if v_job.id is null then
            raise exception 'Unable to schedule job for key "%"', coalesce(job_key, '<null>') using errcode = 'GWNOR';
        end if;

        return v_job;
    elsif job_key_mode = 'unsafe_dedupe' then
        insert into _private_tasks as tasks (identifier)
        select add_job.identifier
        where not exists (
            select 1 from _private_tasks as existing
            where existing.identifier = add_job.identifier
        )
        on conflict do nothing;

        if queue_name is not null then
            insert into _private_job_queues as job_queues (queue_name)
            select add_job.queue_name
            where not exists (
                select 1 from _private_job_queues as existing
                where existing.queue_name = add_job.queue_name
            )
            on conflict do nothing;
        end if;

        insert into _private_jobs as jobs (
            job_queue_id,
            task_id,
            payload,
            run_at,
            max_attempts,
            key,
            priority,
            flags
        )
        select
            job_queues.id,
            tasks.id,
            coalesce(payload, '{}'::json),
            coalesce(run_at, now()),
            coalesce(max_attempts::smallint, 25::smallint),
            job_key,
            coalesce(priority::smallint, 0::smallint),
            (
                select jsonb_object_agg(flag, true)
                from unnest(flags) as item(flag)
            )
        from _private_tasks as tasks
        left join _private_job_queues as job_queues
        on job_queues.queue_name = add_job.queue_name
        where tasks.identifier = add_job.identifier
        on conflict (key)
        do update set
            revision = jobs.revision + 1,
            updated_at = now()
        returning *
        into v_job;

        if v_job.revision = 0 then
            perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}');
        end if;

        return v_job;
    else
        raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
    end if;
end;
$$;

-- Also support upgrades from upstream revision 20, which has no recovery objects.
CREATE TABLE IF NOT EXISTS _private_workers (
    id text PRIMARY KEY,
    last_heartbeat_at timestamptz NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    metadata jsonb
);

CREATE INDEX IF NOT EXISTS _private_workers_last_heartbeat_at_idx
    ON _private_workers (last_heartbeat_at);

CREATE OR REPLACE FUNCTION worker_heartbeat(
    worker_id text,
    metadata json DEFAULT NULL::json
) RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO _private_workers AS workers (id, last_heartbeat_at, metadata)
    VALUES (worker_heartbeat.worker_id, now(), metadata::jsonb)
    ON CONFLICT (id) DO UPDATE
    SET
        last_heartbeat_at = now(),
        metadata = COALESCE(EXCLUDED.metadata, workers.metadata);
$$;

CREATE OR REPLACE FUNCTION worker_deregister(worker_id text) RETURNS void
LANGUAGE sql
AS $$
    DELETE FROM _private_workers
    WHERE id = worker_deregister.worker_id;
$$;

CREATE OR REPLACE FUNCTION list_stale_workers(
    stale_threshold interval
) RETURNS TABLE(worker_id text)
LANGUAGE sql
AS $$
    SELECT workers.id AS worker_id
    FROM _private_workers AS workers
    WHERE workers.last_heartbeat_at < now() - stale_threshold;
$$;

CREATE OR REPLACE FUNCTION list_orphan_locked_workers(
    stale_threshold interval
) RETURNS TABLE(worker_id text)
LANGUAGE sql
AS $$
    SELECT DISTINCT locks.locked_by AS worker_id
    FROM (
        SELECT jobs.locked_by, jobs.locked_at
        FROM _private_jobs AS jobs
        WHERE jobs.locked_by IS NOT NULL
        UNION ALL
        SELECT job_queues.locked_by, job_queues.locked_at
        FROM _private_job_queues AS job_queues
        WHERE job_queues.locked_by IS NOT NULL
    ) AS locks
    WHERE locks.locked_at < now() - stale_threshold
    AND NOT EXISTS (
        SELECT 1
        FROM _private_workers AS workers
        WHERE workers.id = locks.locked_by
    );
$$;

CREATE OR REPLACE FUNCTION recover_dead_worker_jobs(
    worker_ids text[],
    recovery_delay interval DEFAULT interval '0 seconds'
) RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    recovered_count integer := 0;
BEGIN
    WITH j AS (
        UPDATE _private_jobs AS jobs
        SET
            attempts = GREATEST(0, jobs.attempts - 1),
            locked_by = NULL,
            locked_at = NULL,
            run_at = GREATEST(jobs.run_at, now() + recovery_delay),
            last_error = 'Job recovered after worker interruption',
            updated_at = now()
        WHERE jobs.locked_by = ANY(worker_ids)
        RETURNING jobs.job_queue_id
    )
    SELECT COUNT(*) INTO recovered_count FROM j;

    UPDATE _private_job_queues AS job_queues
    SET locked_by = NULL, locked_at = NULL
    WHERE job_queues.locked_by = ANY(worker_ids);

    RETURN recovered_count;
END;
$$;

CREATE OR REPLACE FUNCTION delete_stale_workers(
    worker_ids text[]
) RETURNS void
LANGUAGE sql
AS $$
    DELETE FROM _private_workers AS workers
    WHERE workers.id = ANY(worker_ids);
$$;

insert into migrations (id, breaking) values (21, false);

-- m000022
-- Explicitly distinguish replaced jobs from ordinary final attempts.
CREATE TABLE _private_job_retirements (
    id bigint PRIMARY KEY REFERENCES _private_jobs(id) ON DELETE CASCADE
);

-- Retain ownership until the handler releases the job and its named queue.
CREATE OR REPLACE FUNCTION add_jobs(specs job_spec[], job_key_preserve_run_at boolean DEFAULT false) RETURNS SETOF _private_jobs
LANGUAGE plpgsql
AS $$
declare
    locked_key text;
begin
    for locked_key in
        select distinct spec.job_key
        from unnest(specs) spec
        where spec.job_key is not null
        order by spec.job_key
    loop
        perform pg_advisory_xact_lock(hashtext(locked_key));
    end loop;

    perform 1
    from _private_jobs as jobs
    where jobs.key = any(
        array(
            select distinct spec.job_key
            from unnest(specs) spec
            where spec.job_key is not null
        )
    )
    for update;

    insert into _private_tasks as tasks (identifier)
    select distinct spec.identifier
    from unnest(specs) spec
    where not exists (
        select 1 from _private_tasks as existing
        where existing.identifier = spec.identifier
    )
    on conflict do nothing;

    insert into _private_job_queues as job_queues (queue_name)
    select distinct spec.queue_name
    from unnest(specs) spec
    where spec.queue_name is not null
    and not exists (
        select 1 from _private_job_queues as existing
        where existing.queue_name = spec.queue_name
    )
    on conflict do nothing;

    with retired as (
        update _private_jobs as jobs
        set
            key = null,
            attempts = jobs.max_attempts,
            updated_at = now()
        from unnest(specs) spec
        where spec.job_key is not null
        and jobs.key = spec.job_key
        and is_available is not true
        returning jobs.id
    )
    insert into _private_job_retirements(id)
    select id from retired
    on conflict do nothing;

    perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || array_length(specs, 1)::text || '}');

    return query insert into _private_jobs as jobs (
        job_queue_id,
        task_id,
        payload,
        run_at,
        max_attempts,
        key,
        priority,
        flags
    )
        select
            job_queues.id,
            tasks.id,
            coalesce(spec.payload, '{}'::json),
            coalesce(spec.run_at, now()),
            coalesce(spec.max_attempts, 25),
            spec.job_key,
            coalesce(spec.priority, 0),
            (
                select jsonb_object_agg(flag, true)
                from unnest(spec.flags) as item(flag)
            )
        from unnest(specs) spec
        inner join _private_tasks as tasks
        on tasks.identifier = spec.identifier
        left join _private_job_queues as job_queues
        on job_queues.queue_name = spec.queue_name
    on conflict (key) do update set
        job_queue_id = excluded.job_queue_id,
        task_id = excluded.task_id,
        payload =
            case
            when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
                (jobs.payload::jsonb || excluded.payload::jsonb)::json
            else
                excluded.payload
            end,
        max_attempts = excluded.max_attempts,
        run_at = (case
            when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
            else excluded.run_at
        end),
        priority = excluded.priority,
        revision = jobs.revision + 1,
        flags = excluded.flags,
        attempts = 0,
        last_error = null,
        updated_at = now()
    where jobs.locked_at is null
    returning *;
end;
$$;

CREATE OR REPLACE FUNCTION recover_dead_worker_jobs(
    worker_ids text[],
    recovery_delay interval DEFAULT interval '0 seconds'
) RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    recovered_count integer := 0;
BEGIN
    -- Take row locks before the statement that reads retirement markers.
    PERFORM 1 FROM _private_jobs AS jobs
    WHERE jobs.locked_by = ANY(worker_ids)
    ORDER BY jobs.id
    FOR UPDATE;

    WITH j AS (
        UPDATE _private_jobs AS jobs
        SET
            attempts = CASE WHEN EXISTS (
                SELECT 1 FROM _private_job_retirements AS retired
                WHERE retired.id = jobs.id
            ) THEN jobs.attempts
                ELSE GREATEST(0, jobs.attempts - 1) END,
            locked_by = NULL,
            locked_at = NULL,
            run_at = GREATEST(jobs.run_at, now() + recovery_delay),
            last_error = 'Job recovered after worker interruption',
            updated_at = now()
        WHERE jobs.locked_by = ANY(worker_ids)
        RETURNING jobs.job_queue_id
    )
    SELECT COUNT(*) INTO recovered_count FROM j;

    UPDATE _private_job_queues AS job_queues
    SET locked_by = NULL, locked_at = NULL
    WHERE job_queues.locked_by = ANY(worker_ids);

    RETURN recovered_count;
END;
$$;

CREATE OR REPLACE FUNCTION reschedule_jobs(job_ids bigint[], run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer DEFAULT NULL::integer, attempts integer DEFAULT NULL::integer, max_attempts integer DEFAULT NULL::integer) RETURNS SETOF _private_jobs
LANGUAGE plpgsql
AS $$
BEGIN
    -- Explicit revival must see and clear a concurrently committed retirement.
    PERFORM 1 FROM _private_jobs AS jobs
    WHERE jobs.id = ANY(job_ids)
    AND (jobs.locked_at IS NULL OR jobs.locked_at < now() - interval '4 hours')
    ORDER BY jobs.id
    FOR UPDATE;

    RETURN QUERY WITH updated AS (
    UPDATE _private_jobs AS jobs
    SET
        run_at = COALESCE(reschedule_jobs.run_at, jobs.run_at),
        priority = COALESCE(reschedule_jobs.priority::smallint, jobs.priority),
        attempts = COALESCE(reschedule_jobs.attempts::smallint, jobs.attempts),
        max_attempts = COALESCE(reschedule_jobs.max_attempts::smallint, jobs.max_attempts),
        updated_at = now()
    WHERE id = ANY(job_ids)
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING *
    ), cleared AS (
        DELETE FROM _private_job_retirements AS retired
        USING updated
        WHERE retired.id = updated.id
    )
    SELECT * FROM updated;
END;
$$;

CREATE OR REPLACE FUNCTION remove_job(job_key text) RETURNS _private_jobs
LANGUAGE plpgsql STRICT
AS $$
declare
    v_job _private_jobs;
begin
    -- Delete job if not locked
    DELETE FROM _private_jobs AS jobs
    WHERE key = job_key
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING * INTO v_job;
    IF NOT (v_job IS NULL) THEN
        RETURN v_job;
    END IF;
    -- Otherwise prevent job from retrying, and clear the key
    UPDATE _private_jobs AS jobs
    SET
        key = NULL,
        attempts = jobs.max_attempts,
        updated_at = now()
    WHERE key = job_key
    RETURNING * INTO v_job;
    IF v_job.id IS NOT NULL THEN
        INSERT INTO _private_job_retirements(id)
        VALUES (v_job.id) ON CONFLICT DO NOTHING;
    END IF;
    RETURN v_job;
end;
$$;

CREATE OR REPLACE FUNCTION permanently_fail_jobs(job_ids bigint[], error_message text DEFAULT NULL::text) RETURNS SETOF _private_jobs
LANGUAGE sql
AS $$
    WITH retired AS (
    UPDATE _private_jobs AS jobs
    SET
        last_error = COALESCE(error_message, 'Manually marked as failed'),
        attempts = max_attempts,
        updated_at = now()
    WHERE id = ANY(job_ids)
    AND (
        locked_at IS NULL
    OR
        locked_at < NOW() - interval '4 hours'
    )
    RETURNING *
    ), marked AS (
        INSERT INTO _private_job_retirements(id)
        SELECT id FROM retired
        ON CONFLICT DO NOTHING
    )
    SELECT * FROM retired;
$$;

-- Lock first, then read retirement state in a fresh READ COMMITTED snapshot.
-- A single UPDATE with a marker subquery can miss a retirement committed while
-- the UPDATE was waiting for the job row lock.
CREATE FUNCTION _private_return_jobs(
    worker_id text,
    job_ids bigint[],
    recovery_delay_ms bigint DEFAULT NULL,
    recovery_error text DEFAULT NULL,
    update_recovery_metadata boolean DEFAULT false
) RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM 1 FROM _private_jobs AS jobs
    WHERE jobs.id = ANY(job_ids) AND jobs.locked_by = worker_id
    ORDER BY jobs.id
    FOR UPDATE;

    WITH returned AS (
        UPDATE _private_jobs AS jobs
        SET
            attempts = CASE WHEN EXISTS (
                SELECT 1 FROM _private_job_retirements AS retired
                WHERE retired.id = jobs.id
            ) THEN jobs.attempts ELSE GREATEST(0, jobs.attempts - 1) END,
            locked_by = NULL,
            locked_at = NULL,
            run_at = CASE WHEN update_recovery_metadata AND recovery_delay_ms IS NOT NULL
                THEN GREATEST(jobs.run_at, now() + recovery_delay_ms * interval '1 millisecond')
                ELSE jobs.run_at END,
            last_error = CASE WHEN update_recovery_metadata
                THEN COALESCE(recovery_error, jobs.last_error) ELSE jobs.last_error END,
            updated_at = CASE WHEN update_recovery_metadata THEN now() ELSE jobs.updated_at END
        WHERE jobs.id = ANY(job_ids) AND jobs.locked_by = worker_id
        RETURNING jobs.job_queue_id
    )
    UPDATE _private_job_queues AS queues
    SET locked_by = NULL, locked_at = NULL
    FROM returned
    WHERE queues.id = returned.job_queue_id AND queues.locked_by = worker_id;
END;
$$;

insert into migrations (id, breaking) values (22, false);


-- dbq-bench: below this line, not graphile_worker's.
--
-- graphile_worker deletes a job when it completes it. A trigger keeps the id of each job
-- deleted while a worker held it (a completion), so that the proof can tell a done job from
-- a lost one (a waiting job deleted by anyone else leaves no trace: lost).
CREATE TABLE dbq_graphile_completed (id bigint PRIMARY KEY);

CREATE FUNCTION dbq_graphile_completed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_graphile_completed (id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_graphile_completed
  AFTER DELETE ON _private_jobs
  FOR EACH ROW
  WHEN (OLD.locked_at IS NOT NULL)
  EXECUTE FUNCTION dbq_graphile_completed();

-- Each job in the harness's words (design.toml's [states] view): held by a worker
-- (locked) in flight, its attempts used up dead, otherwise waiting (a failed job waits for
-- its back-off); completed ones from the trigger's table.
CREATE VIEW graphile_job_state AS
SELECT id,
       (CASE WHEN locked_at IS NOT NULL        THEN 'processing'
             WHEN attempts >= max_attempts     THEN 'dead_letter'
             ELSE 'pending'
        END)::varchar AS status,
       NULL::int AS retry_count,
       payload::jsonb AS payload
FROM   _private_jobs
UNION ALL
SELECT id, 'done'::varchar, NULL::int, NULL::jsonb
FROM   dbq_graphile_completed;
