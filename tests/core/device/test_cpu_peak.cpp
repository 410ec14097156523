// The measured CPU peak: positive rates for the widest ISA, kept in the cache directory and read
// back by the next call, measured afresh when the file is damaged or another CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "device/cpu/cpu_peak.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

// TANDEM_CACHE_DIR set to a directory of the test's own while it runs.
class CacheDir {
public:
    CacheDir() {
        if (const char* old = std::getenv("TANDEM_CACHE_DIR")) old_ = old, had_ = true;
        setenv("TANDEM_CACHE_DIR", dir_.path().c_str(), 1);
    }
    ~CacheDir() {
        if (had_)
            setenv("TANDEM_CACHE_DIR", old_.c_str(), 1);
        else
            unsetenv("TANDEM_CACHE_DIR");
    }
    const TempDir& dir() const { return dir_; }

private:
    TempDir dir_;
    std::string old_;
    bool had_ = false;
};

void overwrite(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
}

TEST(CpuPeak, MeasuredOnceThenReadFromItsFile) {
    CacheDir cache;
    const CpuPeak first = cpu_peak();
    EXPECT_FALSE(first.model.empty());
    EXPECT_TRUE(first.isa == "AVX-512" || first.isa == "AVX2+FMA" || first.isa == "SSE2")
        << first.isa;
    EXPECT_GE(first.cores, 1);
    EXPECT_GT(first.gflops_one_core, 0);
    EXPECT_GT(first.gflops_all_cores, 0);
    EXPECT_GT(first.bandwidth_gbs, 0);
    ASSERT_EQ(cache.dir().entries().size(), 1u);
    EXPECT_EQ(first.cache_file, cache.dir().file(cache.dir().entries()[0]));

    const CpuPeak again = cpu_peak();  // from the file: the very same figures
    EXPECT_EQ(again.measured_at, first.measured_at);
    EXPECT_EQ(again.gflops_one_core, std::round(first.gflops_one_core * 1000) / 1000);
    EXPECT_EQ(again.cache_file, first.cache_file);

    // A damaged file, or one naming another CPU, is measured over; nothing is raised.
    for (const std::string& text :
         {std::string("{\"model\": \"x\""),
          std::string("{\"model\": \"Another CPU\", \"isa\": \"SSE2\", \"cores\": 1, "
                      "\"gflops_one_core\": 1, \"gflops_all_cores\": 1, "
                      "\"bandwidth_gbs\": 1, \"measured_at\": \"then\"}")}) {
        overwrite(first.cache_file, text);
        const CpuPeak fresh = cpu_peak();
        EXPECT_GT(fresh.gflops_one_core, 1.0);
        EXPECT_NE(fresh.measured_at, "then");
        EXPECT_EQ(fresh.model, first.model);
    }
}

TEST(CpuPeak, AnUnwritableCacheOnlyCostsAMeasurement) {
    CacheDir cache;
    overwrite(cache.dir().file("not_a_dir"), "");
    setenv("TANDEM_CACHE_DIR", cache.dir().file("not_a_dir").c_str(), 1);
    const CpuPeak p = cpu_peak();
    EXPECT_GT(p.gflops_all_cores, 0);
    EXPECT_EQ(p.cache_file, "");
}

}  // namespace
}  // namespace tandem::test
