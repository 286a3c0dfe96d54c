/* Continues a run that FTI 1.1 itself started: restarts from FTI 1.1's checkpoint tree with the
 * config file as FTI 1.1 rewrote it, sizing the buffers from the checkpoint.
 *
 *   fti11 CONFIG NVARS LEVEL
 *
 * Datasets 1..NVARS are int arrays; element j of dataset id on rank r is
 * id*1000003 + j + r*100000000, as in the shared vectors. After recovery one more checkpoint at
 * LEVEL, then FTI_Finalize. */
#include <fti.h>

#include <stdio.h>

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fti11 CONFIG NVARS LEVEL\n");
        return 2;
    }
    int nvars = atoi(argv[2]), level = atoi(argv[3]), rank;
    MPI_Init(&argc, &argv);
    int init = FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    int* data[8] = {0};
    long stored[8] = {0};
    for (int v = 0; v < nvars; v++) FTI_Protect(v + 1, NULL, 0, FTI_INTG);
    for (int v = 0; v < nvars; v++) {
        stored[v] = FTI_GetStoredSize(v + 1);
        data[v] = FTI_Realloc(v + 1, data[v]);
    }
    int status = FTI_Status();
    int recovered = FTI_Recover();
    long wrong = 0;
    for (int v = 0; v < nvars; v++) {
        for (long j = 0; j < stored[v] / 4; j++) {
            wrong += data[v][j] != (v + 1) * 1000003 + (int)j + rank * 100000000;
        }
    }
    printf("= rank %d init %d status %d sizes %ld %ld %ld recover %d wrong %ld\n", rank, init,
           status, stored[0], stored[1], stored[2], recovered, wrong);
    int taken = FTI_Checkpoint(3, level);
    printf("= rank %d checkpoint %d finalize %d\n", rank, taken, FTI_Finalize());
    MPI_Finalize();
    return 0;
}
