import CVulkan
