// How long OpenMP's idle threads spin before they sleep, unless the user chose it.
#pragma once

namespace tandem::tool {

// Starts this program again with GOMP_SPINCOUNT set to the turns of about 75 microseconds of
// this CPU's spinning when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set; returns when one is
// (or when the restart failed). First thing in main().
void bound_openmp_spinning(char** argv);

}  // namespace tandem::tool
