// run_ptx_cases <dir>: runs the cases make_ptx_cases wrote on the GPU with the CUDA driver API
// (cuModuleLoadData: the driver compiles the PTX for this GPU) and compares each output with
// the CPU interpreter's. Exact cases (IEEE-exact ops only) must match bit for bit; the others
// within float tolerance (libdevice's exp/log/tanh/erf/pow differ from glibc's in the last
// bits). Prints one JSON line per large case (GB/s) and a summary; exits 1 on any failure.
// Depends on nothing but cuda.h and libcuda, so it builds on the device machine as it is.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define CHECK_CU(call)                                                                     \
  do {                                                                                     \
    CUresult r_ = (call);                                                                  \
    if (r_ != CUDA_SUCCESS) {                                                              \
      const char* s_ = nullptr;                                                            \
      cuGetErrorString(r_, &s_);                                                           \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, s_ ? s_ : "?", __FILE__, __LINE__); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

float half_to_float(uint16_t h) {  // IEEE binary16, exact
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  float f;
  if (exp == 0) f = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) f = mant ? NAN : INFINITY;
  else f = std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
  return sign ? -f : f;
}

// Element i of a buffer of `dtype` as a double.
double value(const std::string& dtype, const std::string& bytes, size_t i) {
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
    return v;
  };
  if (dtype == "f32") return get(float{});
  if (dtype == "f64") return get(double{});
  if (dtype == "i32") return get(int32_t{});
  if (dtype == "i64") return static_cast<double>(get(int64_t{}));
  if (dtype == "u8" || dtype == "bool") return get(uint8_t{});
  if (dtype == "bf16") {
    uint32_t u = static_cast<uint32_t>(get(uint16_t{})) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  if (dtype == "f16") return half_to_float(get(uint16_t{}));
  std::fprintf(stderr, "unknown dtype %s\n", dtype.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: run_ptx_cases <dir>\n");
    return 2;
  }
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  char name[256];
  CHECK_CU(cuDeviceGetName(name, sizeof name, dev));
  int major = 0, minor = 0;
  CHECK_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));

  int cases = 0, exact_cases = 0, bitwise = 0, within = 0, failed = 0;
  double worst_rel = 0;
  for (int i = 0;; ++i) {
    const std::string dir = std::string(argv[1]) + "/case_" + std::to_string(i);
    if (!std::filesystem::exists(dir + "/meta.txt")) break;
    std::map<std::string, std::string> meta;
    std::istringstream meta_text(read_file(dir + "/meta.txt"));
    for (std::string k, v; meta_text >> k >> v;) meta[k] = v;
    const std::string ptx = read_file(dir + "/kernel.ptx");
    CUmodule module;
    CHECK_CU(cuModuleLoadData(&module, ptx.c_str()));
    CUfunction fn;
    CHECK_CU(cuModuleGetFunction(&fn, module, meta["kernel"].c_str()));
    const int64_t n = std::stoll(meta["elements"]);
    const int loads = std::stoi(meta["loads"]);
    const std::string dtype = meta["dtype"];
    std::vector<CUdeviceptr> bufs(static_cast<size_t>(loads) + 1);
    size_t bytes_moved = 0;
    for (int k = 0; k < loads; ++k) {
      const std::string data = read_file(dir + "/load_" + std::to_string(k) + ".bin");
      CHECK_CU(cuMemAlloc(&bufs[static_cast<size_t>(k)], std::max<size_t>(data.size(), 1)));
      CHECK_CU(cuMemcpyHtoD(bufs[static_cast<size_t>(k)], data.data(), data.size()));
      bytes_moved += data.size();
    }
    const std::string expected = read_file(dir + "/expected.bin");
    CHECK_CU(cuMemAlloc(&bufs.back(), std::max<size_t>(expected.size(), 1)));
    bytes_moved += expected.size();
    std::vector<void*> params;
    for (CUdeviceptr& b : bufs) params.push_back(&b);
    int64_t count = n;
    params.push_back(&count);
    const unsigned block = 256, grid = static_cast<unsigned>((n + block - 1) / block);
    CHECK_CU(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, nullptr, params.data(), nullptr));
    CHECK_CU(cuCtxSynchronize());
    if (n >= 500000) {  // time the large cases: median of 20 launches
      CUevent a, b;
      CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
      CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
      std::vector<float> ms;
      for (int r = 0; r < 20; ++r) {
        CHECK_CU(cuEventRecord(a, nullptr));
        CHECK_CU(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, nullptr, params.data(), nullptr));
        CHECK_CU(cuEventRecord(b, nullptr));
        CHECK_CU(cuEventSynchronize(b));
        float t = 0;
        CHECK_CU(cuEventElapsedTime(&t, a, b));
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      std::printf("{\"bench\": \"ptx_case\", \"case\": %d, \"elements\": %lld, \"loads\": %d, \"us\": %.2f, \"gb_per_s\": %.1f}\n",
                  i, static_cast<long long>(n), loads, ms[10] * 1e3, bytes_moved / (ms[10] * 1e-3) / 1e9);
    }
    std::string actual(expected.size(), '\0');
    CHECK_CU(cuMemcpyDtoH(actual.data(), bufs.back(), actual.size()));
    for (CUdeviceptr b : bufs) CHECK_CU(cuMemFree(b));
    CHECK_CU(cuModuleUnload(module));

    ++cases;
    const bool exact = meta["exact"] == "1";
    exact_cases += exact;
    if (actual == expected) {
      ++bitwise;
      continue;
    }
    // Not bitwise: exact cases fail; others are compared as values.
    const bool narrow = dtype == "bf16" || dtype == "f16";
    const bool integral = dtype == "i32" || dtype == "i64" || dtype == "u8" || dtype == "bool";
    double rel = 0;
    int64_t off = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double x = value(dtype, actual, static_cast<size_t>(j)), y = value(dtype, expected, static_cast<size_t>(j));
      if (x == y || (std::isnan(x) && std::isnan(y))) continue;
      ++off;
      rel = std::max(rel, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
    worst_rel = std::max(worst_rel, integral ? 0.0 : rel);
    // Integers after rounding may flip at a boundary; floats stay within tolerance.
    const bool ok = !exact && (integral ? off <= std::max<int64_t>(1, n / 1000) : rel <= (narrow ? 1e-2 : 1e-4));
    if (ok) {
      ++within;
    } else {
      ++failed;
      std::printf("{\"failed_case\": %d, \"shape\": \"%s\", \"exact\": %d, \"elements_off\": %lld, \"max_rel\": %g}\n", i,
                  meta["shape"].c_str(), exact, static_cast<long long>(off), rel);
    }
  }
  std::printf("{\"bench\": \"ptx_cases\", \"gpu\": \"%s\", \"compute_capability\": %d%d, \"cases\": %d, "
              "\"exact_cases\": %d, \"bitwise_equal\": %d, \"within_tolerance\": %d, \"failed\": %d, "
              "\"max_rel_err_inexact\": %g}\n",
              name, major, minor, cases, exact_cases, bitwise, within, failed, worst_rel);
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  return failed == 0 && cases > 0 ? 0 : 1;
}
