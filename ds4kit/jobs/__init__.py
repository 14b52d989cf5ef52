"""Jobs: each one `run(config, target) -> path of its report.json`, in its own module.

A job does the work of one command: checks its config (ConfigError naming the flag, before
anything loads), loads the target inside its run so failures are recorded, asks the target for
the capabilities it needs and records what it could not measure, streams progress through the
callbacks it is given, keeps what it produced when it is interrupted (ds4kit.interrupts) and
writes its run folder. The click commands in ds4kit.cli only parse flags, build the config and
the target (ds4kit.targets.build_target), call `run` and print.

    generate        one generation (ds4kit.jobs.generate)
    bench_engine    ds4kit versus llama.cpp tok/s (ds4kit.jobs.bench_engine)
    thermal_watch   telemetry while a command runs (ds4kit.jobs.thermal_watch)

Probes (ds4kit.probes) and evals (ds4kit.evals) follow the same pattern.
"""
