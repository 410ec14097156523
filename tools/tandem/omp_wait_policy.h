// OpenMP's idle threads sleep instead of spinning, unless the user chose otherwise.
#pragma once

namespace tandem::tool {

// Starts this program again with OMP_WAIT_POLICY=passive when neither it nor GOMP_SPINCOUNT is
// set; returns when one is (or when the restart failed). First thing in main().
void let_idle_openmp_threads_sleep(char** argv);

}  // namespace tandem::tool
