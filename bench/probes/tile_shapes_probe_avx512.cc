// Probe (not part of the build): register tile shapes and loop orders for the packed f32
// schedule on AVX-512, in C++ intrinsics, against OpenBLAS's sgemm in the same process, one
// thread. Variants (env ONLY=comma list of names): "RxV" = R rows x V zmm columns per register
// tile, Radix's order (column blocks of BN with B packed per block into panels [K][16V], row
// blocks of BM, K blocks of BK, A read in place with its row stride); "gRxV" = Goto / BLIS order
// (K blocks of GKC: B packed [GKC][GNC]; row blocks of GMC: A packed [GMC/R][GKC][R]; panels
// outer, row tiles inner, so B's micro-panel stays in L1 and A streams from L2).
// Env: BN / BK / BM, GNC / GKC / GMC, PADA=n (A's rows n floats apart beyond K: no L1 set
// conflicts between them), PFD=d (each K step prefetches B's panel d steps ahead into L1).
//   g++ -O3 -march=native -std=c++20 bench/probes/tile_shapes_probe_avx512.cc -o /tmp/tiles -lopenblas
//   OPENBLAS_CORETYPE=SkylakeX ONLY=8x2,6x4,g8x2 taskset -c 0 /tmp/tiles 4096 3
// Zen 5 host, 2026-12-07, 4096^3, GFLOP/s (the host's speed moved 10-15% minute to minute, so
// compare within a line): 8x2 (Radix's) 163-197 beside OpenBLAS 180-198; 6x4 164-196 (no
// better); 8x3 (at 4608, 48-column panels) 172-176 beside 8x2's 174-181; 4x4 126-173; 12x2 /
// 14x2 / 7x4 114-134 / 89-102 / 138-161 with A's rows 16 KiB apart (12 or more rows of A in one
// L1 set), 186-190 / 182-186 / - with PADA=16; Goto order g8x2 148-183 with any of
// GNC x GKC x GMC = 4096 x 256 x 256, 4096 x 512 x 128, 1024 x 256 x 64, 512 x 512 x 256
// beside 8x2's 182-195; B prefetched PFD = 16 / 32 / 64 steps ahead 162-171 against 169-178.
// None beats Radix's 8 x 32 tiles and blocks.
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
static long PFD = 0;
// A read in place (row stride lda) or, PACKED, as [k][MR] (lda unused).
template <int MR, int NV, bool PACKED = false>
static __attribute__((noinline)) void kern(const float* a, long lda, const float* b, float* c, long ldc, long K, bool first) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i) for (int j = 0; j < NV; ++j)
    acc[i][j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * j);
  for (long k = 0; k < K; k += 4) {
    if (PFD) {
#pragma GCC unroll 16
      for (int l = 0; l < NV * 4; ++l) _mm_prefetch((const char*)(b + NV * 16 * (k + PFD) + 16 * l), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int kk = 0; kk < 4; ++kk) {
      __m512 bv[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) bv[j] = _mm512_load_ps(b + NV * 16 * (k + kk) + 16 * j);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        __m512 av = _mm512_set1_ps(PACKED ? a[MR * (k + kk) + i] : a[i * lda + k + kk]);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; ++i) for (int j = 0; j < NV; ++j) _mm512_storeu_ps(c + i * ldc + 16 * j, acc[i][j]);
}
long LDA = 0;
static long GNC = 4096, GKC = 256, GMC = 256;
static float* gpa = nullptr;
// Goto order: jc (nc) > pc (kc): pack B[kc][nc] in panels > ic (mc): pack A[mc][kc] as [mc/MR][kc][MR] > jr (panel) > ir (MR rows)
template <int MR, int NV>
void rungoto(const float* A, const float* B, float* C, float* pb, long M, long N, long K, long, long, long) {
  const int PW = NV * 16;
  const long nc = std::min(GNC, N), kc = std::min(GKC, K), mc = std::min(GMC, M);
  if (!gpa) gpa = (float*)aligned_alloc(64, 4 * 4096 * 4096);
  for (long jc = 0; jc < N; jc += nc)
    for (long pc = 0; pc < K; pc += kc) {
      for (long p = 0; p < nc / PW; ++p) for (long k = 0; k < kc; ++k) memcpy(pb + p * kc * PW + PW * k, &B[(pc + k) * N + jc + PW * p], 4 * PW);
      for (long ic = 0; ic < M; ic += mc) {
        for (long r = 0; r < mc; r += MR)
          for (long k = 0; k < kc; k += 16) {
            __m512 rows[MR];
            for (int i = 0; i < MR; ++i) rows[i] = _mm512_loadu_ps(&A[(ic + r + i) * LDA + pc + k]);
            float* dst = gpa + r * kc + k * MR;
            alignas(64) float t[MR][16];
            for (int i = 0; i < MR; ++i) _mm512_store_ps(t[i], rows[i]);
            for (int kk = 0; kk < 16; ++kk) for (int i = 0; i < MR; ++i) dst[kk * MR + i] = t[i][kk];
          }
        for (long p = 0; p < nc / PW; ++p)
          for (long r = 0; r < mc; r += MR)
            kern<MR, NV, true>(gpa + r * kc, 0, pb + p * kc * PW, &C[(ic + r) * N + jc + PW * p], N, kc, pc == 0);
      }
    }
}
template <int MR, int NV>
void run(const float* A, const float* B, float* C, float* pb, long M, long N, long K, long BN, long BK, long BM) {
  const int PW = NV * 16;
  for (long jb = 0; jb < N; jb += BN) {
    for (int p = 0; p < BN / PW; ++p) for (long k = 0; k < K; ++k) memcpy(pb + p * K * PW + PW * k, &B[k * N + jb + PW * p], 4 * PW);
    for (long rb = 0; rb < M; rb += BM)
      for (long kb = 0; kb < K; kb += BK)
        for (long r = rb; r < std::min(M, rb + BM); r += MR) {
          long rows = std::min<long>(MR, M - r);
          for (int p = 0; p < BN / PW; ++p) {
            float* c = &C[r * N + jb + PW * p];
            if (rows == MR) kern<MR, NV>(&A[r * LDA + kb], LDA, pb + p * K * PW + kb * PW, c, N, BK, kb == 0);
            else for (long i = 0; i < rows; ++i) kern<1, NV>(&A[(r + i) * LDA + kb], LDA, pb + p * K * PW + kb * PW, c + i * N, N, BK, kb == 0);
          }
        }
  }
}
int main(int argc, char** argv) {
  const long N = atol(argv[1]); const int reps = atoi(argv[2]);
  const long M = N, K = N;
  long BN = getenv("BN") ? atol(getenv("BN")) : 256, BK = std::min(getenv("BK") ? atol(getenv("BK")) : 512L, K), BM = getenv("BM") ? atol(getenv("BM")) : 256;
  std::vector<float> A(M * K), B(K * N), C3(M * N);
  for (auto& v : A) v = rand() % 100 / 100.f; for (auto& v : B) v = rand() % 100 / 100.f;
  PFD = getenv("PFD") ? atol(getenv("PFD")) : 0;
  if (getenv("GNC")) GNC = atol(getenv("GNC")); if (getenv("GKC")) GKC = atol(getenv("GKC")); if (getenv("GMC")) GMC = atol(getenv("GMC"));
  LDA = K + (getenv("PADA") ? atol(getenv("PADA")) : 0);
  std::vector<float> Ap(M * LDA);
  for (long i = 0; i < M; ++i) memcpy(&Ap[i * LDA], &A[i * K], 4 * K);
  float* pb = (float*)aligned_alloc(64, sizeof(float) * K * 1024);
  struct V { const char* name; void (*fn)(const float*, const float*, float*, float*, long, long, long, long, long, long); long bn; };
  std::vector<V> vs = {{"8x2", run<8, 2>, 256}, {"g8x2", rungoto<8, 2>, 256}, {"g4x4", rungoto<4, 4>, 256}, {"4x4", run<4, 4>, 256}, {"6x4", run<6, 4>, 256}, {"12x2", run<12, 2>, 256},
                       {"14x2", run<14, 2>, 256}, {"8x3", run<8, 3>, 384}, {"7x4", run<7, 4>, 256}, {"5x5", run<5,5>, 240}};
  std::vector<std::vector<float>> Cs(vs.size(), std::vector<float>(M * N));
  openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, A.data(), K, B.data(), N, 0, C3.data(), N);
  const char* only = getenv("ONLY");
  for (size_t v = 0; v < vs.size(); ++v) {
    if (only && !strstr(only, vs[v].name)) continue;
    if (N % vs[v].bn) continue;
    vs[v].fn(Ap.data(), B.data(), Cs[v].data(), pb, M, N, K, vs[v].bn, BK, BM);
    double e = 0; for (long i = 0; i < M * N; ++i) e = std::max(e, (double)fabsf(Cs[v][i] - C3[i]));
    printf("%s maxerr %g\n", vs[v].name, e);
  }
  for (int rep = 0; rep < reps; ++rep) {
    double f = 2.0 * M * N * K / 1e9;
    double t0 = now(); cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, A.data(), K, B.data(), N, 0, C3.data(), N);
    printf("openblas %.1f", f / (now() - t0));
    for (size_t v = 0; v < vs.size(); ++v) {
      if (only && !strstr(only, vs[v].name)) continue;
      if (N % vs[v].bn) continue;
      double t = now(); vs[v].fn(Ap.data(), B.data(), Cs[v].data(), pb, M, N, K, vs[v].bn, BK, BM);
      printf(" %s %.1f", vs[v].name, f / (now() - t));
    }
    printf("\n");
  }
}
