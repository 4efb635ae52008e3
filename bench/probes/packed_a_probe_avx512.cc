// Probe (not part of the build): packed_a_probe.cc's question for AVX-512. Radix's packed f32
// schedule on Zen 5 in C++ intrinsics: column blocks of BN (256) with B packed per block into
// panels [K][32], row blocks of BM (256), K blocks of BK (512), 8x32 register tiles, the first K
// block from zeros; A read in place with its row stride (as Radix does) against A packed whole into
// [M/8][K][8] first (timed with it; env PK=1), both against OpenBLAS's sgemm in the same process,
// one thread. Env BN / BK / BM change the blocks, PFA=1 prefetches the next 8-row strip of A.
//   g++ -O3 -march=native -std=c++20 bench/probes/packed_a_probe_avx512.cc -o /tmp/pa512 -lopenblas
//   OPENBLAS_CORETYPE=SkylakeX PK=1 /tmp/pa512 1024 7
// Zen 5 host, 2026-12-07, GFLOP/s strided / packed / OpenBLAS: 1024 152-175 / 140-165 / 151-176,
// 2048 184-188 / 172-173 / 185-190, 4096 178-188 / 168-169 / 186-193: packing A does not pay on
// Zen 5 (it does on Zen 3). Blocks at 4096 (BN x BK x BM): 256 x 512 x 256 (Radix's) 175-187,
// 64 x 4096 x 256 (whole K) 145-156, 128 x 2048 x 128 174-178, 64 x 1024 x 256 177-179 (OpenBLAS
// 184-195 alongside); the next A strip prefetched: no change.
#include <immintrin.h>
#include <cblas.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <bool PACKED>
static inline __attribute__((always_inline)) void kern(const float* a, long lda, const float* b, float* c, long ldc, long K, bool first) {
  __m512 c0[8], c1[8];
  for (int i = 0; i < 8; ++i) {
    if (first) { c0[i] = _mm512_setzero_ps(); c1[i] = _mm512_setzero_ps(); }
    else { c0[i] = _mm512_loadu_ps(c + i * ldc); c1[i] = _mm512_loadu_ps(c + i * ldc + 16); }
  }
  for (long k = 0; k < K; k += 4) {
#pragma GCC unroll 4
    for (int kk = 0; kk < 4; ++kk) {
      __m512 b0 = _mm512_load_ps(b + 32 * (k + kk)), b1 = _mm512_load_ps(b + 32 * (k + kk) + 16);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        __m512 av = _mm512_set1_ps(PACKED ? a[8 * (k + kk) + i] : a[i * lda + k + kk]);
        c0[i] = _mm512_fmadd_ps(av, b0, c0[i]); c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
      }
    }
  }
  for (int i = 0; i < 8; ++i) { _mm512_storeu_ps(c + i * ldc, c0[i]); _mm512_storeu_ps(c + i * ldc + 16, c1[i]); }
}
int main(int argc, char** argv) {
  const long N = atol(argv[1]); const int reps = atoi(argv[2]);
  const long M = N, K = N; const long BN = getenv("BN") ? atol(getenv("BN")) : 256, BK = std::min(getenv("BK") ? atol(getenv("BK")) : 512L, K), BM = getenv("BM") ? atol(getenv("BM")) : 256;
  std::vector<float> A(M * K), B(K * N), C(M * N), C2(M * N), C3(M * N);
  for (auto& v : A) v = rand() % 100 / 100.f; for (auto& v : B) v = rand() % 100 / 100.f;
  float* pb = (float*)aligned_alloc(64, sizeof(float) * K * BN);
  float* pa = (float*)aligned_alloc(64, sizeof(float) * M * K);
  auto run = [&](int mode, float* Cout) {
    if (mode == 1)
      for (long r = 0; r < M; r += 8)
        for (long k = 0; k < K; k += 16) {
          // 8 rows x 16 k, scalar (a vectorized transpose would make packing cheaper still)
          for (long kk = 0; kk < 16; ++kk) for (int i = 0; i < 8; ++i) pa[r * K + (k + kk) * 8 + i] = A[(r + i) * K + k + kk];
        }
    for (long jb = 0; jb < N; jb += BN) {
      for (int p = 0; p < BN / 32; ++p) for (long k = 0; k < K; ++k) memcpy(pb + p * K * 32 + 32 * k, &B[k * N + jb + 32 * p], 128);
      for (long rb = 0; rb < M; rb += BM)
        for (long kb = 0; kb < K; kb += BK)
          for (long r = rb; r < std::min(M, rb + BM); r += 8)
            for (int p = 0; p < BN / 32; ++p) {
              float* c = &Cout[r * N + jb + 32 * p];
              if (getenv("PFA") && r + 8 < M) {
                const float* na = &A[(r + 8) * K + kb];
                for (int l = p * 32; l < p * 32 + 32; ++l) _mm_prefetch((const char*)(na + (l / 32) * K + (l % 32) * 16), _MM_HINT_T0);
              }
              if (mode == 1) kern<true>(pa + r * K + kb * 8, 0, pb + p * K * 32 + kb * 32, c, N, BK, kb == 0);
              else kern<false>(&A[r * K + kb], K, pb + p * K * 32 + kb * 32, c, N, BK, kb == 0);
            }
    }
  };
  openblas_set_num_threads(1);
  run(0, C.data()); run(1, C2.data());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, A.data(), K, B.data(), N, 0, C3.data(), N);
  double e1 = 0, e2 = 0;
  for (long i = 0; i < M * N; ++i) { e1 = std::max(e1, (double)fabsf(C[i] - C3[i])); e2 = std::max(e2, (double)fabsf(C2[i] - C3[i])); }
  printf("maxerr strided %g packed %g\n", e1, e2);
  for (int rep = 0; rep < reps; ++rep) {
    double t[3];
    for (int v = 0; v < 3; ++v) {
      double t0 = now();
      if (v == 1 && !getenv("PK")) { t[v] = 1e9; continue; }
      if (v < 2) run(v, v ? C2.data() : C.data());
      else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, A.data(), K, B.data(), N, 0, C3.data(), N);
      t[v] = now() - t0;
    }
    double f = 2.0 * M * N * K / 1e9;
    printf("%ld: strided %.1f packed %.1f openblas %.1f GFLOP/s\n", N, f / t[0], f / t[1], f / t[2]);
  }
}
