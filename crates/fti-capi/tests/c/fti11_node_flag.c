/* FTI 1.1's test `nodeFlag`, for libfti: with every process's stdout in its own file
 * (log<world rank>.txt), checkpoints once at each level 1..4 at verbosity 1; then rank 0 reads
 * every file's debug lines "Has nodeFlag = 1 and nodeID = N. CkptLvel = L." and checks that for
 * each level each node has exactly one process saying so. Progress goes to stderr.
 *
 *   fti11_node_flag CONFIG [ignored...]
 *
 * Exit status 0 when the check holds, 1 when it does not, 2 when a log cannot be read. */
#include "fti11_suite.h"

#include <fcntl.h>
#include <unistd.h>

#define LEVELS 4

/* flagged[level - 1][node]: the world rank that said so first, or -1. */
static int check_logs(int world_size, int nodes) {
    int* flagged = malloc(sizeof(int) * LEVELS * nodes);
    for (int i = 0; i < LEVELS * nodes; i++) flagged[i] = -1;
    int rtn = 0;
    char path[64], line[512];
    for (int p = 0; p < world_size && rtn == 0; p++) {
        snprintf(path, sizeof path, "./log%d.txt", p);
        FILE* f = fopen(path, "r");
        if (f == NULL) {
            fprintf(stderr, "Cannot read file %s.\n", path);
            rtn = 2;
            break;
        }
        while (rtn == 0 && fgets(line, sizeof line, f) != NULL) {
            int who, node, level;
            if (strstr(line, "Has nodeFlag = 1 and nodeID =") == NULL) continue;
            if (sscanf(line, "[FTI Debug - %d] : Has nodeFlag = 1 and nodeID = %d. CkptLvel = %d.",
                       &who, &node, &level) != 3 ||
                level < 1 || level > LEVELS || node < 0 || node >= nodes) {
                fprintf(stderr, "Unexpected line in %s: %s", path, line);
                rtn = 1;
                break;
            }
            int* slot = &flagged[(level - 1) * nodes + node];
            if (*slot == -1) *slot = who;
            if (*slot != who) {
                fprintf(stderr, "The node %d on checkpoint level %d has more than 1 nodeFlag process: %d and %d.\n",
                        node, level, who, *slot);
                rtn = 1;
            }
        }
        fclose(f);
    }
    for (int i = 0; rtn == 0 && i < LEVELS * nodes; i++) {
        if (flagged[i] == -1) {
            fprintf(stderr, "Node %d on checkpoint level %d don't have signed process!\n", i % nodes, i / nodes + 1);
            rtn = 1;
        }
    }
    for (int p = 0; rtn == 0 && p < world_size; p++) {
        snprintf(path, sizeof path, "./log%d.txt", p);
        unlink(path);
    }
    free(flagged);
    return rtn;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fti11_node_flag CONFIG\n");
        return 2;
    }
    setbuf(stdout, NULL);
    int world, world_size, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    char path[64];
    snprintf(path, sizeof path, "./log%d.txt", world);
    int log = open(path, O_CREAT | O_RDWR | O_TRUNC, 0666);
    if (log < 0) {
        fprintf(stderr, "Cannot open %s file.\n", path);
        return 1;
    }
    dup2(log, 1);
    FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    int* data = calloc(world_size, sizeof(int));
    FTI_Protect(1, data, world_size, FTI_INTG);
    for (int level = 1; level <= LEVELS; level++) {
        if (rank == 0) fprintf(stderr, "Making checkpoint L%d\n", level);
        FTI_Checkpoint(level, level);
    }
    /* Every application rank's lines are written before rank 0 reads them. */
    MPI_Barrier(FTI_COMM_WORLD);
    int node_size = (int)suite_ini_int(argv[1], "basic", "node_size", 1);
    int heads = (int)suite_ini_int(argv[1], "basic", "head", 0);
    int offline_l4 = heads > 0 && suite_offline(argv[1], 4);
    if (offline_l4) suite_end_without_finalize(argv[1], 4);
    int rtn = 0;
    if (rank == 0) {
        fprintf(stderr, "Verifying logs...\n");
        rtn = check_logs(world_size, world_size / node_size);
    }
    if (!offline_l4) FTI_Finalize();
    close(log);
    free(data);
    MPI_Finalize();
    return rtn;
}
