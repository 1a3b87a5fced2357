public enum LayerKitCommands { public static func main(_ arguments: [String]) -> Int32 { 0 } }
