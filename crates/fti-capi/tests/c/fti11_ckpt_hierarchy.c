/* FTI 1.1's corner-case test `ckptHierarchy`, for libfti: every rank protects four quarters
 * of an array of 1Mi ints (ids 1-4); `config.fti` in the working directory.
 *
 *   fti11_ckpt_hierarchy L1 L2 L3 L4 CRASH RECOVER
 *
 * RECOVER = 0: the array is filled and checkpoints 1..4 are taken at levels L1..L4 (a level
 * per checkpoint); RECOVER = 1: FTI_Recover instead. CRASH = 1 ends the run without
 * FTI_Finalize (fti11_suite.h), so that the local checkpoints stay; otherwise FTI_Finalize.
 * The driver then looks at the files left. Exit status 0. */
#include "fti11_suite.h"

#define ARRAY_SIZE (1024 * 1024)
#define QUARTER (ARRAY_SIZE / 4)

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int world, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (argc != 7) {
        if (world == 0) printf("usage: fti11_ckpt_hierarchy L1 L2 L3 L4 CRASH(0/1) RECOVER(0/1)\n");
        MPI_Finalize();
        return 1;
    }
    int levels[4], crash = atoi(argv[5]), recover = atoi(argv[6]);
    for (int k = 0; k < 4; k++) levels[k] = atoi(argv[k + 1]);
    FTI_Init("config.fti", MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    int* array = malloc(sizeof(int) * ARRAY_SIZE);
    if (recover == 0) {
        for (int j = 0; j < ARRAY_SIZE; j++) array[j] = j + rank;
    }
    for (int q = 0; q < 4; q++) FTI_Protect(q + 1, array + q * QUARTER, QUARTER, FTI_INTG);
    if (recover == 0) {
        for (int k = 0; k < 4; k++) FTI_Checkpoint(k + 1, levels[k]);
    } else {
        FTI_Recover();
    }
    if (crash == 1) {
        suite_end_without_finalize("config.fti", levels[3]);
        MPI_Barrier(FTI_COMM_WORLD);
    } else {
        FTI_Finalize();
    }
    MPI_Finalize();
    free(array);
    return 0;
}
