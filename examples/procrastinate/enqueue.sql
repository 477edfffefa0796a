-- procrastinate's own defer function (what App.defer_async calls), one job: the harness's
-- payload is the task's keyword arguments.
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[
         ROW('default', 'dbq_bench', :priority, NULL, NULL, :payload::jsonb, NULL)::procrastinate_job_to_defer_v1
       ])) AS id
