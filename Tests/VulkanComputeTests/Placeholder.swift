import Testing
@testable import VulkanCompute
