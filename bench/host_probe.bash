# SPDX-License-Identifier: MIT
# Sourced by bench/run and bench/run-worker.
# How fast the host ran around the figures: a fixed single-threaded CPU loop (awk) five times,
# "fastest-slowest ms". This machine's speed moves between days and hours; a slower probe than
# the last run's says that figures (and floors) moved with the host, not with the code.
host_probe() {
  local times=() t0 t1
  for _ in 1 2 3 4 5; do
    t0=$(date +%s%N)
    awk 'BEGIN { for (i = 0; i < 5000000; i++) s += i * i; if (s < 0) print s }'
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk 'NR == 1 { min = $1 } { max = $1 } END { printf "%d-%d ms", min, max }'
}
