#pragma once
#include <avif/avif.h>
