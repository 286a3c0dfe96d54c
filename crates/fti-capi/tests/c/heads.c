/* With dedicated heads (head = 1, node_size = 2, 8 processes): continues FTI 1.1's own
 * head-L4-io3 run. FTI_Init returns on the application ranks only (the heads serve, then
 * MPI_Finalize and exit), with FTI_COMM_WORLD holding them; each recovers its two arrays,
 * checkpoints again at L2, L3 and L4 (post-processed by the heads when the config says
 * inline_lK = 0) and finalizes.
 *
 *   heads CONFIG
 *
 * Datasets 1 and 2 are int arrays of 2^18 elements: a[j] = r*1000000 + k*1000 + j%977 and
 * b[j] = -a[j] for checkpoint k on rank r of FTI_COMM_WORLD. */
#include <fti.h>

#include <stdio.h>
#include <stdlib.h>

#define N (1 << 18)

static void fill(int* a, int* b, int rank, int k) {
    for (int j = 0; j < N; j++) {
        a[j] = rank * 1000000 + k * 1000 + j % 977;
        b[j] = -a[j];
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: heads CONFIG\n");
        return 2;
    }
    int world, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    int init = FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    MPI_Comm_size(FTI_COMM_WORLD, &size);
    int* a = calloc(N, sizeof(int));
    int* b = calloc(N, sizeof(int));
    int* want_a = malloc(N * sizeof(int));
    int* want_b = malloc(N * sizeof(int));
    FTI_Protect(1, a, N, FTI_INTG);
    FTI_Protect(2, b, N, FTI_INTG);
    int status = FTI_Status();
    int recovered = FTI_Recover();
    fill(want_a, want_b, rank, 2);
    long wrong = 0;
    for (int j = 0; j < N; j++) wrong += a[j] != want_a[j] || b[j] != want_b[j];
    printf("= world %d rank %d size %d init %d status %d recover %d wrong %ld\n", world, rank,
           size, init, status, recovered, wrong);
    fill(a, b, rank, 3);
    int l2 = FTI_Checkpoint(3, 2);
    fill(a, b, rank, 4);
    int l3 = FTI_Checkpoint(4, 3);
    fill(a, b, rank, 5);
    int l4 = FTI_Checkpoint(5, 4);
    printf("= world %d checkpoints %d %d %d finalize %d\n", world, l2, l3, l4, FTI_Finalize());
    MPI_Finalize();
    return 0;
}
