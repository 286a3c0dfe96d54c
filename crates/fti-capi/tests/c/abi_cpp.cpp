// fti.h from C++: the declarations have C linkage and compile as C++11.
#include <fti.h>

#include <cstdio>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    FTIT_type pair;
    int rc = FTI_InitType(&pair, 2 * static_cast<int>(sizeof(int)));
    std::printf("= InitType %d size %d structure %d\n", rc, pair.size, pair.structure == nullptr);
    std::printf("= Status %d Protect %d\n", FTI_Status(), FTI_Protect(0, &rc, 1, FTI_INTG));
    MPI_Finalize();
    return 0;
}
