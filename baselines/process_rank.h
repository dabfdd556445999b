// The launcher side of the one-process-per-GPU anchors (nccl_barriers.cu --processes,
// nvshmem_barriers.cu): the rank variables a launcher sets, and a unique ID that rank 0
// makes and hands to the other ranks through a file.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

// The launcher's variable `first` (scoped-sync-run, torchrun), else Open MPI's `second`;
// exits with a usage error when neither is set.
inline int launcher_int(const char *program, const char *first, const char *second) {
    const char *value = std::getenv(first);
    if (value == nullptr) value = std::getenv(second);
    if (value == nullptr) {
        std::fprintf(stderr, "%s: neither %s nor %s is set (start it with a launcher)\n", program, first, second);
        std::exit(2);
    }
    return std::atoi(value);
}

// This process's rank, the number of ranks and its GPU (its local rank).
struct ProcessRank {
    int rank, ranks, gpu;
};

inline ProcessRank process_rank(const char *program) {
    return {launcher_int(program, "RANK", "OMPI_COMM_WORLD_RANK"),
            launcher_int(program, "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
            launcher_int(program, "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")};
}

// Rank 0 calls `make(id)` and writes the ID into `path` (through a rename, so a reader
// never sees half of it); the others wait for the file, at most a minute. Plain bytes:
// the IDs of NCCL and NVSHMEM are.
template <typename Id, typename Make>
void share_unique_id(const char *program, int rank, const std::string &path, Id *id, Make make) {
    if (rank == 0) {
        make(id);
        std::string partial = path + ".partial";
        FILE *file = std::fopen(partial.c_str(), "wb");
        if (file == nullptr || std::fwrite(id, sizeof *id, 1, file) != 1 || std::fclose(file) != 0 ||
            std::rename(partial.c_str(), path.c_str()) != 0) {
            std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
            std::exit(1);
        }
        return;
    }
    for (int tries = 0; tries < 60000; ++tries) {
        FILE *file = std::fopen(path.c_str(), "rb");
        if (file != nullptr) {
            size_t read = std::fread(id, sizeof *id, 1, file);
            std::fclose(file);
            if (read == 1) return;
        }
        usleep(1000);
    }
    std::fprintf(stderr, "%s: rank %d: no unique ID in %s after 60 s\n", program, rank, path.c_str());
    std::exit(1);
}
