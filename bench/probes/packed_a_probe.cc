// Probe (not part of the build): Radix's AVX2 packed-matmul loop structure written in C++
// intrinsics, to measure what packing A would give before changing the transform schedule.
// Column blocks of 64 (B packed per block into 4 panels [K][16], as emit_packed_matmul's fused
// pack), row blocks of 96, 6x16 register tiles over all of K, C written once; A read in place
// with its row stride (as Radix does) against A packed whole into [M/6][K][6] first (the packing
// counted in its time), both against OpenBLAS's sgemm in the same process, one thread.
//   g++ -O3 -march=znver3 -std=c++20 bench/probes/packed_a_probe.cc -o /tmp/packed_a_probe -lopenblas
//   /tmp/packed_a_probe 1024 7
// Zen 3 host, 2026-12-07 (a slow period of the shared VM: OpenBLAS 66-70 GFLOP/s, not 89-94):
// 1024: strided 53.9, packed 70.0, OpenBLAS 66.2 GFLOP/s; 2048: 55.0 / 66.8 / 67.5; 4096: 54.3 /
// 74.0 / 70.4. (Radix's own strided code runs 0.91-0.97x OpenBLAS, better than this C form's 0.8.)
#include <immintrin.h>
#include <cblas.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <bool PACKED>
static inline __attribute__((always_inline)) void kern(const float* a, long lda, const float* b, float* c, long ldc, long K) {
  __m256 c0[6], c1[6];
  for (int i = 0; i < 6; ++i) { c0[i] = _mm256_setzero_ps(); c1[i] = _mm256_setzero_ps(); }
  for (long k = 0; k < K; k += 4) {
#pragma GCC unroll 4
    for (int kk = 0; kk < 4; ++kk) {
      __m256 b0 = _mm256_load_ps(b + 16 * (k + kk)), b1 = _mm256_load_ps(b + 16 * (k + kk) + 8);
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) {
        __m256 av = _mm256_broadcast_ss(PACKED ? a + 6 * (k + kk) + i : a + i * lda + k + kk);
        c0[i] = _mm256_fmadd_ps(av, b0, c0[i]); c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
      }
    }
  }
  for (int i = 0; i < 6; ++i) { _mm256_storeu_ps(c + i * ldc, c0[i]); _mm256_storeu_ps(c + i * ldc + 8, c1[i]); }
}
int main(int argc, char** argv) {
  const long N = atol(argv[1]); const int reps = atoi(argv[2]);
  const long M = N / 6 * 6, K = N;  // M a multiple of 6 (1020 for 1024: both variants alike)
  std::vector<float> A(M * K), B(K * N), C(M * N), C2(M * N), C3(M * N);
  for (auto& v : A) v = rand() % 100 / 100.f; for (auto& v : B) v = rand() % 100 / 100.f;
  float* pb = (float*)aligned_alloc(64, sizeof(float) * K * 64);
  float* pa = (float*)aligned_alloc(64, sizeof(float) * M * K);
  auto run = [&](bool packed, float* Cout) {
    if (packed)
      for (long r = 0; r < M; r += 6)
        for (long k = 0; k < K; ++k) for (int i = 0; i < 6; ++i) pa[r * K + k * 6 + i] = A[(r + i) * K + k];
    for (long jb = 0; jb < N; jb += 64) {
      for (int p = 0; p < 4; ++p) for (long k = 0; k < K; ++k) memcpy(pb + p * K * 16 + 16 * k, &B[k * N + jb + 16 * p], 64);
      for (long rb = 0; rb < M; rb += 96)
        for (long r = rb; r < std::min(M, rb + 96); r += 6)
          for (int p = 0; p < 4; ++p) {
            if (packed) kern<true>(pa + r * K, 0, pb + p * K * 16, &Cout[r * N + jb + 16 * p], N, K);
            else kern<false>(&A[r * K], K, pb + p * K * 16, &Cout[r * N + jb + 16 * p], N, K);
          }
    }
  };
  openblas_set_num_threads(1);
  run(false, C.data()); run(true, C2.data());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C3.data(), N);
  double md = 0, mb = 0; for (long i = 0; i < M * N; ++i) { md = std::max(md, (double)std::abs(C[i] - C2[i])); mb = std::max(mb, (double)std::abs(C[i] - C3[i]) / (1 + std::abs(C3[i]))); }
  printf("maxdiff %g vs blas %g\n", md, mb);
  const double fl = 2.0 * M * N * K; std::vector<double> q, qb, ga, gb, gs;
  const int inner = std::max(1, (int)(1e10 / fl));
  for (int r = 0; r < reps; ++r) {
    double t0 = now(); for (int i = 0; i < inner; ++i) run(false, C.data());
    double t1 = now(); for (int i = 0; i < inner; ++i) run(true, C2.data());
    double t2 = now(); for (int i = 0; i < inner; ++i) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C3.data(), N);
    double t3 = now();
    ga.push_back(fl * inner / (t1 - t0) / 1e9); gb.push_back(fl * inner / (t2 - t1) / 1e9); gs.push_back(fl * inner / (t3 - t2) / 1e9);
    q.push_back(gb.back() / ga.back()); qb.push_back(ga.back() / gs.back());
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  printf("strided %.1f packed %.1f openblas %.1f GFLOP/s | packed/strided %.3f  strided/openblas %.3f\n", med(ga), med(gb), med(gs), med(q), med(qb));
}
